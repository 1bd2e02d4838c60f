/**
 * Semaphores on a real Redis Cluster (3 masters), with ioredis `Cluster` and node-redis `createCluster`: every key of
 * a semaphore (its permits' records, its index, a fenced write's keys named with `hashTagOf`) is in the slot of
 * `{name}`, so each acquire is one script on the master serving it, touching records it did not declare, never
 * refused CROSSSLOT; semaphores on different masters; a smaller race (4 clients, limit 3) holds as on one node.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { clusterSlot } from '../../src/adapters/redis/cross-slot.js';
import { createRedisStore } from '../../src/adapters/redis/index.js';
import { toConnection } from '../../src/adapters/redis/connection.js';
import { keyNames } from '../../src/adapters/redis/keys.js';
import { permitKey } from '../../src/fence/permits.js';
import { permitCommand } from '../permits/race-checks.js';
import { startRedisCluster, type RedisCluster } from '../support/redis-cluster.js';
import { openClusterClient, type ClusterClientKind } from '../topology/redis-cluster-harness.js';
import { freshPrefix } from './redis-harness.js';
import { racePermits, type PermitStore } from './redis-permits-racer.js';

const KINDS: readonly ClusterClientKind[] = ['ioredis', 'node-redis'];

describe('redis cluster: semaphores keep to their slot', () => {
  let cluster: RedisCluster;
  beforeAll(async () => {
    cluster = await startRedisCluster({ masters: 3, replicasPerMaster: 0 });
  }, 60_000);
  afterAll(async () => {
    await cluster?.stop();
  });

  it.each(KINDS)('%s: acquires on semaphores of different masters, each key in its semaphore slot', { timeout: 60_000 }, async (kind) => {
    const { client, close } = await openClusterClient(kind, cluster.seeds);
    const prefix = freshPrefix(`lf-cluster-permit-${kind}`);
    const store = createRedisStore({ client, prefix }) as PermitStore;
    const names = keyNames(prefix);
    try {
      const semaphores = ['pool-0', 'pool-1', 'pool-2', 'pool-3', 'pool-4', 'pool-5'];
      const masters = new Set(await Promise.all(semaphores.map(async (name) => (await cluster.masterOf(clusterSlot(`{${name}}`))).port)));
      expect(masters.size).toBeGreaterThan(1);
      for (const semaphore of semaphores) {
        const slot = clusterSlot(`{${semaphore}}`);
        for (let index = 1; index <= 2; index += 1) {
          expect(await store.acquirePermit(permitCommand(semaphore, 'w', 2, 60_000))).toMatchObject({ ok: true, index });
          expect(clusterSlot(names.record(permitKey(semaphore, index), 'lease'))).toBe(slot);
        }
        expect(await store.acquirePermit(permitCommand(semaphore, 'w', 2, 60_000))).toMatchObject({ ok: false, reason: 'full' });
        const master = await cluster.masterOf(slot);
        expect(await cluster.admin(master.port).call('SMEMBERS', `${prefix}{${semaphore}}:permits`)).toEqual(
          expect.arrayContaining(['1', '2']),
        );
      }
    } finally {
      await close();
    }
  });

  it.each(KINDS)(
    '%s: 4 clients, limit 3: never more than 3 live, tokens rising, fenced writes in token order',
    { timeout: 60_000 },
    async (kind) => {
      const clients = await Promise.all(Array.from({ length: 4 }, () => openClusterClient(kind, cluster.seeds)));
      const prefix = freshPrefix(`lf-cluster-permit-race-${kind}`);
      try {
        const stores = clients.map(({ client }) => createRedisStore({ client, prefix }) as PermitStore);
        const raw = toConnection((clients[0] as (typeof clients)[number]).client);
        const run = await racePermits(stores, raw, { prefix, semaphore: `race-${kind}`, limit: 3, total: 80 });
        expect(run.grants.length).toBeGreaterThanOrEqual(80);
      } finally {
        await Promise.all(clients.map(({ close }) => close()));
      }
    },
  );
});
