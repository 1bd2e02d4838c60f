/**
 * Waiting claims woken on a real Redis Cluster (3 masters + 3 replicas, started once for this file): with
 * ioredis 5 and 6 `Cluster` (`shardedSubscribers: true`) and node-redis `createCluster` as subscriber,
 * a waiting claim on a key of each master is granted within about a second of the holder's release or
 * revoke, long before the holder's expiry (so the wake-up granted it, not the schedule), and its end
 * leaves no sharded subscription on that master. An ioredis `Cluster` without `shardedSubscribers` (which
 * never emits `smessage`, so every wake-up would be lost) is refused as a subscriber.
 */
import { Cluster } from 'ioredis';
import { Cluster as Cluster6 } from 'ioredis6';
import { createCluster } from 'redis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { InvalidArgumentError } from '../../src/errors.js';
import { createLeases } from '../../src/leases.js';
import type { Leases } from '../../src/leases-types.js';
import { createRedisStore, hashTagOf, type RedisClient, type RedisSubscriber } from '../../src/adapters/redis/index.js';
import { clusterSlot } from '../../src/adapters/redis/cross-slot.js';
import { keyNames } from '../../src/adapters/redis/keys.js';
import { freedChannelOf } from '../../src/adapters/redis/freed-channel.js';
import { freshPrefix, type RedisStore } from '../adapters/redis-harness.js';
import { startRedisCluster, type RedisCluster } from '../support/redis-cluster.js';
import { openClusterClient, type ClusterClientKind, type ClusterSeeds } from './redis-cluster-harness.js';

/** The subscriber's client; the store's own client is ioredis 5's Cluster for `ioredis6`. */
type SubscriberKind = ClusterClientKind | 'ioredis6';
const kinds: readonly SubscriberKind[] = ['ioredis', 'ioredis6', 'node-redis'];
/** The holder's TTL: far beyond the grant deadline, so only a wake-up can grant the waiter in time. */
const HOLDER_TTL_MS = 30_000;
/** A wake-up grants within this many ms of the release (generous for a loaded 2-core machine). */
const WOKEN_WITHIN_MS = 1_500;

let topology: RedisCluster;
beforeAll(async () => {
  topology = await startRedisCluster();
}, 120_000);
afterAll(async () => {
  await topology?.stop();
});

/** A dedicated cluster subscriber connection of `kind`, with its `close()`. */
async function openClusterSubscriber(
  kind: SubscriberKind,
  client: RedisClient,
  seeds: ClusterSeeds,
): Promise<{ subscriber: RedisSubscriber; close: () => Promise<void> }> {
  if (kind === 'ioredis') {
    // NOTE: without `shardedSubscribers`, ioredis' Cluster sends SSUBSCRIBE to one arbitrary node, which refuses
    // channels of other shards' slots (CROSSSLOT / MOVED); with it, each shard gets its own subscriber connection.
    const subscriber = (client as Cluster).duplicate([], { shardedSubscribers: true, lazyConnect: true });
    subscriber.on('error', () => undefined);
    await subscriber.connect();
    return { subscriber, close: async () => void subscriber.disconnect() };
  }
  if (kind === 'ioredis6') {
    const subscriber = new Cluster6([...seeds], { shardedSubscribers: true, lazyConnect: true });
    subscriber.on('error', () => undefined);
    await subscriber.connect();
    return { subscriber, close: async () => void subscriber.disconnect() };
  }
  const subscriber = createCluster({ rootNodes: seeds.map(({ host, port }) => ({ url: `redis://${host}:${port}` })) });
  subscriber.on('error', () => undefined);
  await subscriber.connect();
  return {
    subscriber: subscriber as unknown as RedisSubscriber,
    close: async () => void (subscriber.isOpen ? await subscriber.close() : undefined),
  };
}

/** One key per master (by its hash tag's slot), with that master's port. */
async function keyPerMaster(label: string): Promise<Array<{ key: string; port: number }>> {
  const found = new Map<number, string>();
  for (let index = 0; found.size < 3; index += 1) {
    const key = `${label}:${index}`;
    const master = await topology.masterOf(clusterSlot(hashTagOf(key)));
    if (!found.has(master.port)) found.set(master.port, key);
  }
  return [...found].map(([port, key]) => ({ key, port }));
}

describe.each(kinds)('waiting claims on a redis cluster (%s)', (kind) => {
  const closers: Array<() => Promise<void>> = [];
  const prefix = freshPrefix(`lf-cluster-wait-${kind}`);
  let holder: Leases<RedisStore>;
  let waiter: Leases<RedisStore>;

  beforeAll(async () => {
    const main = await openClusterClient(kind === 'ioredis6' ? 'ioredis' : kind, topology.seeds);
    closers.push(main.close);
    const sub = await openClusterSubscriber(kind, main.client, topology.seeds);
    closers.push(sub.close);
    holder = createLeases(createRedisStore({ client: main.client, prefix }), { holder: 'holder', ttlMs: HOLDER_TTL_MS });
    waiter = createLeases(createRedisStore({ client: main.client, prefix, subscriber: sub.subscriber }), {
      holder: 'waiter',
      ttlMs: HOLDER_TTL_MS,
    });
  });
  afterAll(async () => {
    await Promise.all(closers.map((close) => close()));
  });

  /** Subscribers of `key`'s freed channel on its master (`PUBSUB SHARDNUMSUB` counts only that node's). */
  const shardSubscribers = async (key: string, port: number): Promise<number> => {
    const channel = freedChannelOf(keyNames(prefix).record(key, 'lease'));
    const reply = (await topology.admin(port).call('PUBSUB', 'SHARDNUMSUB', channel)) as [string, number];
    return Number(reply[1]);
  };

  for (const end of ['release', 'revoke'] as const) {
    it(`a waiting claim on each master's key is granted within ${WOKEN_WITHIN_MS} ms of a ${end}, and leaves no sharded subscription`, async () => {
      for (const { key, port } of await keyPerMaster(`${end}-${kind}`)) {
        const held = await holder.claimOrThrow(key);
        // NOTE: the wait must outlast WOKEN_WITHIN_MS but end long before the holder's expiry, and pollMs /
        // recheckMs are out of reach, so a grant in time can only come from the freed message.
        const waiting = waiter.claim(key, { wait: { timeoutMs: 10_000, pollMs: 20_000, recheckMs: 20_000, jitterMs: 0 } });
        await expect.poll(() => shardSubscribers(key, port), { timeout: 5_000, interval: 20 }).toBe(1);
        const endedAt = Date.now();
        if (end === 'release') await holder.release(held);
        else await holder.revoke(key, { reason: 'cluster-wait test' });
        const outcome = await waiting;
        const waitedMs = Date.now() - endedAt;
        expect(outcome.ok, `${key} on master ${port}`).toBe(true);
        expect(waitedMs, `${key} on master ${port}`).toBeLessThan(WOKEN_WITHIN_MS);
        // NOTE: the waiter unsubscribes after its grant without holding the claim's answer back for it.
        await expect.poll(() => shardSubscribers(key, port), { timeout: 5_000, interval: 20 }).toBe(0);
        if (outcome.ok) await waiter.release(outcome.lease);
      }
    }, 60_000);
  }
});

describe('an ioredis Cluster subscriber without shardedSubscribers', () => {
  it('is refused with InvalidArgumentError, given or made by the factory (its smessage events never reach the store)', async () => {
    const plain = new Cluster([...topology.seeds], { lazyConnect: true });
    plain.on('error', () => undefined);
    const main = await openClusterClient('ioredis', topology.seeds);
    // NOTE: a duplicate keeps its original's options (lazyConnect included), so an unsharded client's is refused too.
    const duplicate = (main.client as Cluster).duplicate();
    try {
      expect(() => createRedisStore({ client: main.client, subscriber: plain })).toThrow(InvalidArgumentError);
      expect(() => createRedisStore({ client: main.client, subscriber: duplicate })).toThrow(/shardedSubscribers: true/);
      const leases = createLeases(
        createRedisStore({ client: main.client, prefix: freshPrefix('lf-cluster-wait-factory'), subscriber: () => plain }),
        { holder: 'w', ttlMs: HOLDER_TTL_MS },
      );
      await expect(leases.store.watchFreed?.('job:1', () => undefined)).rejects.toThrow(InvalidArgumentError);
      // NOTE: never connected, and closed by the store, since its factory made it.
      expect(plain.status).toBe('end');
    } finally {
      plain.disconnect();
      duplicate.disconnect();
      await main.close();
    }
  });
});
