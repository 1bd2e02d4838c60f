/**
 * A node-redis cluster client with its defaults (each node's client queues commands offline and reconnects
 * for ever) while the master of a lease's slot is down: an operation fails with StoreUnavailableError
 * within readyTimeoutMs instead of waiting in that queue, and nothing lands once the master is back.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createCluster } from 'redis';
import { StoreUnavailableError } from '../../src/errors.js';
import { createLeases } from '../../src/leases.js';
import { createRedisStore, fromNodeRedisCluster } from '../../src/adapters/redis/index.js';
import { keyNames } from '../../src/adapters/redis/keys.js';
import { clusterSlot } from '../../src/adapters/redis/cross-slot.js';
import { startRedisCluster, type RedisCluster } from '../support/redis-cluster.js';
import { freshPrefix } from './redis-harness.js';

const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));

describe('node-redis cluster, the master of a slot down', () => {
  let cluster: RedisCluster;
  beforeAll(async () => {
    cluster = await startRedisCluster({ masters: 3, replicasPerMaster: 0 });
  }, 60_000);
  afterAll(async () => {
    await cluster?.stop();
  });

  it('StoreUnavailableError within readyTimeoutMs, and the refused claim does not land when the master is back', {
    timeout: 60_000,
  }, async () => {
    const client = createCluster({ rootNodes: cluster.seeds.map(({ host, port }) => ({ url: `redis://${host}:${port}` })) });
    client.on('error', () => undefined);
    try {
      await client.connect();
      const prefix = freshPrefix('cluster-down');
      const store = createRedisStore({ client: fromNodeRedisCluster(client, { readyTimeoutMs: 300 }), prefix });
      const a = createLeases(store, { holder: 'a', ttlMs: 60_000 });
      const b = createLeases(store, { holder: 'b', ttlMs: 60_000 });
      // NOTE: a first claim makes (and connects) the node client of the key's master.
      await a.release(await a.claimOrThrow('job:1'));
      const master = await cluster.masterOf(clusterSlot(keyNames(prefix).record('job:1', 'lease')));
      const node = cluster.server(master.port);
      const nodeClient = client.slots[clusterSlot(keyNames(prefix).record('job:1', 'lease'))]!.master.client!;
      await node.kill();
      while (nodeClient.isReady) await sleep(5);
      // NOTE: before the fix the claim sat in the node client's offline queue for as long as the master was down.
      await expect(a.claim('job:1')).rejects.toBeInstanceOf(StoreUnavailableError);
      await node.restart();
      while (!nodeClient.isReady) await sleep(5);
      await cluster.waitUntilHealthy();
      expect(await b.claim('job:1')).toMatchObject({ ok: true, lease: { holder: 'b' } });
    } finally {
      client.destroy();
    }
  });
});
