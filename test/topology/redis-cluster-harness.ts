/**
 * Cluster clients for the topology tests (ioredis `Cluster`, node-redis `createCluster`) and the Redis
 * store's harness for the shared suites on a real Redis Cluster: each harness works under its own key
 * prefix, `connect()` opens another cluster client, the ledger is a list in the lease's slot
 * (`hashTagOf(key)`) RPUSHed inside the fence script, `expireNow` runs the expire hook on the record's master.
 */
import { Cluster } from 'ioredis';
import { createCluster } from 'redis';
import { randomBytes } from 'node:crypto';
import { createRedisStore, hashTagOf, type RedisClient } from '../../src/adapters/redis/index.js';
import { keyNames } from '../../src/adapters/redis/keys.js';
import { toConnection } from '../../src/adapters/redis/connection.js';
import type { MakeStoreHarness } from '../conformance/harness.js';
import { EXPIRE_NOW_SCRIPT } from '../support/redis-expire.js';
import { freshPrefix, type RedisStore } from '../adapters/redis-harness.js';

/** The cluster clients leasefence supports. */
export type ClusterClientKind = 'ioredis' | 'node-redis';

/** Where a cluster client starts: any node's address. */
export type ClusterSeeds = ReadonlyArray<{ readonly host: string; readonly port: number }>;

/** A connected cluster client of `kind` and its `close()`. Errors are observed (node-redis would throw them otherwise). */
export async function openClusterClient(
  kind: ClusterClientKind,
  seeds: ClusterSeeds,
): Promise<{ client: RedisClient; close: () => Promise<void> }> {
  if (kind === 'ioredis') {
    const client = new Cluster([...seeds], {
      lazyConnect: true,
      retryDelayOnFailover: 50,
      retryDelayOnClusterDown: 50,
      retryDelayOnTryAgain: 20,
    });
    client.on('error', () => undefined);
    await client.connect();
    return { client, close: async () => void client.disconnect() };
  }
  const client = createCluster({
    rootNodes: seeds.map(({ host, port }) => ({ url: `redis://${host}:${port}` })),
    defaults: { socket: { reconnectStrategy: () => 50 } },
  });
  client.on('error', () => undefined);
  await client.connect();
  return { client, close: async () => void (client.isOpen ? await client.close() : undefined) };
}

/** The store's harness on the cluster that `seeds()` names. */
export function makeClusterHarness(kind: ClusterClientKind, seeds: () => Promise<ClusterSeeds>): MakeStoreHarness<RedisStore> {
  return async () => {
    const nodes = await seeds();
    const prefix = freshPrefix(`lf-cluster-${kind}`);
    const records = keyNames(prefix);
    const clients: Array<() => Promise<void>> = [];
    const openStore = async (): Promise<{ client: RedisClient; store: RedisStore }> => {
      const { client, close } = await openClusterClient(kind, nodes);
      clients.push(close);
      return { client, store: createRedisStore({ client, prefix }) };
    };
    const first = await openStore();
    const connection = toConnection(first.client);
    const ledgerOf = (key: string): string => `${prefix}${hashTagOf(key)}:ledger`;
    let count = 0;
    return {
      store: first.store,
      connect: async () => (await openStore()).store,
      appendUnderFence: (leases, lease, entry, options) =>
        leases.fencedWrite(lease, (tx) => tx.call('RPUSH', ledgerOf(lease.key), entry), options),
      fencedAppend: (fence, entry, options, refuse) =>
        first.store.fencedWrite(
          fence,
          (tx) => {
            tx.call('RPUSH', ledgerOf(fence.key), entry);
            if (refuse !== undefined) tx.refuse(refuse.code, refuse.detail);
          },
          options,
        ),
      readLedger: async (key) => (await connection.send(['LRANGE', ledgerOf(key), '0', '-1'])) as string[],
      expireNow: async (key) => void (await connection.send(['EVAL', EXPIRE_NOW_SCRIPT, '1', records.record(key, 'lease')])),
      advanceClock: null,
      freshKey: (label = 'key') => `${label}:${++count}:${randomBytes(4).toString('hex')}`,
      close: async () => void (await Promise.all(clients.map((close) => close()))),
    };
  };
}
