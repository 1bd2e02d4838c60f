/**
 * Claim-next on Redis Cluster (3 masters, a replica each; the conformance specs run in redis-cluster.test.ts):
 * the tag rule's point: a set, its index and every item's record live in the set's one
 * slot, so each claim-next is one script on the master serving it, touching records it did not declare.
 */
import { afterAll, describe, expect, it } from 'vitest';
import { clusterSlot } from '../../src/adapters/redis/cross-slot.js';
import { createRedisStore, type RedisStore } from '../../src/adapters/redis/index.js';
import { keyNames } from '../../src/adapters/redis/keys.js';
import { newSecret } from '../../src/secret.js';
import { freshPrefix } from '../adapters/redis-harness.js';
import { startRedisCluster, type RedisCluster } from '../support/redis-cluster.js';
import { openClusterClient, type ClusterClientKind } from './redis-cluster-harness.js';

const kinds: readonly ClusterClientKind[] = ['ioredis', 'node-redis'];

let started: Promise<RedisCluster> | null = null;
const cluster = (): Promise<RedisCluster> => (started ??= startRedisCluster());
afterAll(async () => {
  await (await started)?.stop();
});

type ItemStore = RedisStore & Required<Pick<RedisStore, 'addItems' | 'removeItems' | 'claimNext'>>;

describe.each(kinds)('redis cluster claim-next (%s)', (kind) => {
  it('keeps each set in its slot: sets on different masters, every grant from the set it was asked, the index beside the records', async () => {
    const topology = await cluster();
    const { client, close } = await openClusterClient(kind, topology.seeds);
    try {
      const prefix = freshPrefix(`lf-cluster-next-${kind}`);
      const store = createRedisStore({ client, prefix }) as ItemStore;
      const names = keyNames(prefix);
      // NOTE: sets whose tags hash to different masters (one slot each).
      const sets = ['orders-0', 'orders-1', 'orders-2', 'orders-3', 'orders-4', 'orders-5'];
      const masters = new Set(await Promise.all(sets.map(async (set) => (await topology.masterOf(clusterSlot(`{${set}}`))).port)));
      expect(masters.size).toBeGreaterThan(1);
      for (const set of sets) {
        const keys = [`{${set}}:a`, `{${set}}:b`, set];
        expect(await store.addItems({ set, keys })).toMatchObject({ ok: true, added: keys });
        for (const key of keys) expect(clusterSlot(names.record(key, 'lease'))).toBe(clusterSlot(`${prefix}{${set}}:ready`));
      }
      for (const set of sets) {
        const granted: string[] = [];
        for (let index = 0; index < 3; index += 1) {
          const outcome = await store.claimNext({
            set,
            holder: 'w',
            runId: null,
            secret: newSecret(),
            ttlMs: 60_000,
            attributes: {},
            onExpired: 'take-over',
          });
          if (outcome.ok) granted.push(outcome.key);
        }
        expect(granted).toEqual([set, `{${set}}:a`, `{${set}}:b`].sort());
        const master = await topology.masterOf(clusterSlot(`{${set}}`));
        const scored = await topology.admin(master.port).call('ZCARD', `${prefix}{${set}}:ready`);
        expect(Number(scored)).toBe(3);
      }
    } finally {
      await close();
    }
  }, 60_000);
});
