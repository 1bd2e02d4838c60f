/**
 * leasefence on a real Redis Cluster (3 masters + 3 replicas, started once for this file): the shared
 * conformance, model and race suites with ioredis `Cluster` and node-redis `createCluster`; hash tags,
 * fenced writes and token gates in the lease's slot; a script spanning slots refused before sending;
 * resharding the slot of a busy key; a master killed after its replica missed grants (the clock floor).
 *
 * Run counts are small here (npm test budget); `LEASEFENCE_TEST_SCALE=20` runs the suites longer.
 */
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createLeases } from '../../src/leases.js';
import {
  createRedisStore,
  createRedisTokenGate,
  hashTagOf,
  RedisCrossSlotError,
  type RedisClient,
} from '../../src/adapters/redis/index.js';
import { clusterSlot } from '../../src/adapters/redis/cross-slot.js';
import { toConnection, type RedisConnection } from '../../src/adapters/redis/connection.js';
import { describeStoreSuites } from '../conformance/index.js';
import { freshPrefix } from '../adapters/redis-harness.js';
import { startRedisCluster, type RedisCluster } from '../support/redis-cluster.js';
import { makeClusterHarness, openClusterClient, type ClusterClientKind } from './redis-cluster-harness.js';
import { describeClusterFailover } from './redis-cluster-failover.js';
import { describeClusterResharding } from './redis-cluster-reshard.js';
import { scaled } from '../support/scale.js';

const runs = scaled(10);
const kinds: readonly ClusterClientKind[] = ['ioredis', 'node-redis'];

let started: Promise<RedisCluster> | null = null;
/** The file's cluster, started on first use (the suites open their harness in their own beforeAll). */
const cluster = (): Promise<RedisCluster> => (started ??= startRedisCluster());
afterAll(async () => {
  await (await started)?.stop();
});

for (const kind of kinds) {
  describeStoreSuites(
    `redis cluster (${kind})`,
    makeClusterHarness(kind, async () => (await cluster()).seeds),
    { modelRuns: runs, raceRuns: runs, workers: 3 },
  );
}

/** The sum of `errorstat_CROSSSLOT` over every master: how many CROSSSLOT replies the servers sent. */
async function crossSlotReplies(topology: RedisCluster): Promise<number> {
  let total = 0;
  for (const node of await topology.topology()) {
    const stats = String(await topology.admin(node.port).call('INFO', 'errorstats'));
    total += Number(/errorstat_CROSSSLOT:count=(\d+)/.exec(stats)?.[1] ?? 0);
  }
  return total;
}

describe.each(kinds)('redis cluster specs (%s)', (kind) => {
  let topology: RedisCluster;
  let client: RedisClient;
  let raw: RedisConnection;
  let close: () => Promise<void>;
  const prefix = freshPrefix(`lf-cluster-specs-${kind}`);
  beforeAll(async () => {
    topology = await cluster();
    ({ client, close } = await openClusterClient(kind, topology.seeds));
    raw = toConnection(client);
  });
  afterAll(async () => {
    await close();
  });

  it('the adapter computes the slot every node computes (CLUSTER KEYSLOT), hash tags and Unicode included', async () => {
    const admin = topology.admin(topology.seeds[0]!.port);
    const keys = fc.sample(
      fc.oneof(fc.string({ unit: fc.constantFrom('{', '}', 'a', 'b', 'é', '🎉', ':') }), fc.string({ unit: 'grapheme' })),
      300,
    );
    const slots = await Promise.all(keys.map((key) => admin.call('CLUSTER', 'KEYSLOT', key)));
    expect(keys.map(clusterSlot)).toEqual(slots);
  });

  it('leases on every master: claims, fenced writes and token gates on keys named with hashTagOf work in each slot', async () => {
    const leases = createLeases(createRedisStore({ client, prefix }), { holder: 'a', ttlMs: 60_000 });
    const gate = createRedisTokenGate({ client, prefix });
    const masters = new Set<number>();
    for (let index = 0; masters.size < 3; index += 1) {
      const key = `job:${index}`;
      const master = await topology.masterOf(clusterSlot(hashTagOf(key)));
      if (masters.has(master.port)) continue;
      masters.add(master.port);
      const lease = await leases.claimOrThrow(key);
      const out = `${prefix}${hashTagOf(key)}:out`;
      expect(await leases.fencedWrite(lease, (tx) => tx.call('INCRBY', out, 2), { checkpoint: { step: 1 } })).toMatchObject({
        ok: true,
        value: 2,
      });
      expect(await gate.write(`${hashTagOf(key)}:report`, lease.fence(), (tx) => tx.call('INCR', out))).toMatchObject({
        ok: true,
        value: 3,
      });
      expect(String(await topology.admin(master.port).call('GET', out))).toBe('3');
      await leases.release(lease);
      expect((await leases.claimOrThrow(key)).token).toBeGreaterThan(lease.token);
    }
  });

  it('a fenced write or gate write to a key in another slot is refused with RedisCrossSlotError before sending: no server saw it, nothing applied', async () => {
    const leases = createLeases(createRedisStore({ client, prefix }), { holder: 'a', ttlMs: 60_000 });
    const lease = await leases.claimOrThrow('cross');
    const inSlot = `${prefix}${hashTagOf('cross')}:first`;
    const elsewhere = `${prefix}{elsewhere}:x`;
    expect(clusterSlot(elsewhere)).not.toBe(clusterSlot(inSlot));
    const repliesBefore = await crossSlotReplies(topology);
    const error = await leases
      .fencedWrite(lease, (tx) => {
        void tx.call('SET', inSlot, 'x');
        return tx.call('SET', elsewhere, 'x');
      })
      .catch((caught: unknown) => caught);
    expect(error).toBeInstanceOf(RedisCrossSlotError);
    expect((error as Error).message).toContain('hashTagOf');
    const gateError = await createRedisTokenGate({ client, prefix })
      .write('report:elsewhere', lease.fence(), () => 'other slot')
      .catch((caught: unknown) => caught);
    expect(gateError).toBeInstanceOf(RedisCrossSlotError);
    expect(await crossSlotReplies(topology)).toBe(repliesBefore);
    expect(await raw.send(['EXISTS', inSlot])).toBe(0);
    expect(await leases.fencedWrite(lease, (tx) => tx.call('SET', inSlot, 'same slot'))).toMatchObject({ ok: true, value: 'OK' });
  });

  it('list pages through the leases of every master', async () => {
    const listPrefix = freshPrefix(`lf-cluster-list-${kind}`);
    const store = createRedisStore({ client, prefix: listPrefix });
    const leases = createLeases(store, { holder: 'a', ttlMs: 60_000 });
    const keys = Array.from({ length: 12 }, (_, index) => `listed:${index}`);
    for (const key of keys) await leases.claimOrThrow(key);
    const masters = new Set(await Promise.all(keys.map(async (key) => (await topology.masterOf(clusterSlot(hashTagOf(key)))).port)));
    expect(masters.size).toBe(3);
    const listed: string[] = [];
    for (let cursor: string | null = null, pages = 0; pages === 0 || cursor !== null; pages += 1) {
      const page = await store.list!({ prefix: 'listed:', limit: 5, cursor });
      listed.push(...page.leases.map((lease) => lease.key));
      cursor = page.cursor;
    }
    expect(listed.sort()).toEqual([...keys].sort());
  });

  describeClusterResharding(kind, cluster);
});

describeClusterFailover(cluster);
