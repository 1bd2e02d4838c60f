/**
 * The Redis adapter as a chaos backend. Workers use ioredis as a user would (default re-send of unanswered
 * commands after a reconnect, plus a command timeout), the ledger is an RPUSH recorded inside the fenced
 * write's script, the gated resource an RPUSH inside the token gate's script.
 */
import { Cluster, Redis } from 'ioredis';
import { createClient } from 'redis';
import { createRedisStore, createRedisTokenGate, hashTagOf, type RedisWriteContext } from '../../src/adapters/redis/index.js';
import type { Lease } from '../../src/lease.js';
import { createLeases } from '../../src/leases.js';
import type { Leases } from '../../src/leases-types.js';
import type { Store } from '../../src/store.js';
import { finalKeyState, resourceOf, type ClientKind, type StoreAdmin, type WorkerBackend } from './backend.js';
import { keyNames } from '../../src/adapters/redis/keys.js';
import { EXPIRE_NOW_SCRIPT } from '../support/redis-expire.js';

/** The adapter's default key prefix (see src/adapters/redis/keys.ts). */
export const REDIS_PREFIX = 'leasefence:';
/** The Redis hash holding a lease record (a queue item's key carries its set's hash tag: the adapter's naming). */
export const redisRecordKey = (key: string): string => keyNames(REDIS_PREFIX).record(key, 'lease');
/** A key's ledger: in the key's slot, and per key (the items of a queue set share one hash tag). */
export const ledgerKey = (key: string): string => `${hashTagOf(key)}:chaos-ledger:${key}`;
const gateLedgerKey = (resource: string): string => `${hashTagOf(resource)}:chaos-gate`;

/** A worker's ioredis client: the library's documented setup, with a bound on every command. */
export function workerRedisClient(url: string, name: string): Redis {
  const client = new Redis(url, {
    connectionName: name,
    commandTimeout: 1500,
    maxRetriesPerRequest: 1,
    retryStrategy: () => 50,
    lazyConnect: false,
  });
  client.on('error', () => undefined);
  return client;
}

/**
 * A worker's node-redis 5 client, set up like `workerRedisClient`: a bound on every command, a fast
 * reconnect, and no offline queue (a command sent while disconnected fails at once, known not sent).
 */
export async function workerNodeRedisClient(url: string, name: string): Promise<ReturnType<typeof createClient>> {
  const client = createClient({
    url,
    name,
    disableOfflineQueue: true,
    commandOptions: { timeout: 1500 },
    socket: { connectTimeout: 2000, reconnectStrategy: () => 50 },
  });
  client.on('error', () => undefined);
  await client.connect();
  return client;
}

/** The URL of a cluster for the harness: `redis-cluster://host:port,host:port,...` (every node a seed). */
export function clusterUrl(seeds: ReadonlyArray<{ readonly host: string; readonly port: number }>): string {
  return `redis-cluster://${seeds.map(({ host, port }) => `${host}:${port}`).join(',')}`;
}

/** The seeds of a `clusterUrl`, or `null` for a plain Redis URL. */
export function clusterSeeds(url: string): Array<{ host: string; port: number }> | null {
  if (!url.startsWith('redis-cluster://')) return null;
  return url
    .slice('redis-cluster://'.length)
    .split(',')
    .map((address) => {
      const [host = '', port = ''] = address.split(':');
      return { host, port: Number(port) };
    });
}

/** The URL of a Sentinel setup for the harness: `redis-sentinel://host:port,host:port/<master name>`. */
export function sentinelUrl(sentinels: ReadonlyArray<{ readonly host: string; readonly port: number }>, name: string): string {
  return `redis-sentinel://${sentinels.map(({ host, port }) => `${host}:${port}`).join(',')}/${name}`;
}

/** The Sentinels and master name of a `sentinelUrl`, or `null` for another URL. */
function sentinelsOf(url: string): { sentinels: Array<{ host: string; port: number }>; name: string } | null {
  if (!url.startsWith('redis-sentinel://')) return null;
  const [list = '', name = ''] = url.slice('redis-sentinel://'.length).split('/');
  return { sentinels: clusterSeeds(`redis-cluster://${list}`) ?? [], name };
}

/** A worker's ioredis client behind Sentinel (asks the Sentinels for the master), set up like `workerRedisClient`. */
export function workerSentinelClient(url: string, name: string): Redis {
  const { sentinels, name: master } = sentinelsOf(url) ?? { sentinels: [], name: '' };
  const client = new Redis({
    sentinels,
    name: master,
    connectionName: name,
    commandTimeout: 1500,
    maxRetriesPerRequest: 1,
    retryStrategy: () => 50,
    sentinelRetryStrategy: () => 50,
  });
  client.on('error', () => undefined);
  return client;
}

/**
 * A worker's ioredis `Cluster` client, set up like `workerRedisClient`: a bound on every command, quick
 * retries while a slot has no master (a failover in progress) or is being moved.
 */
export function workerClusterClient(url: string, name: string, commandTimeoutMs = 1500): Cluster {
  const client = new Cluster(clusterSeeds(url) ?? [], {
    redisOptions: { connectionName: name, commandTimeout: commandTimeoutMs },
    retryDelayOnFailover: 50,
    retryDelayOnClusterDown: 50,
    retryDelayOnTryAgain: 20,
    clusterRetryStrategy: () => 50,
  });
  client.on('error', () => undefined);
  return client;
}

/** A worker's connection: ioredis, node-redis 5, or ioredis' `Cluster`. */
async function workerClient(
  kind: ClientKind,
  url: string,
  name: string,
): Promise<{ client: Redis | Cluster | Awaited<ReturnType<typeof workerNodeRedisClient>>; ioredis: Redis | null; close(): void }> {
  if (kind === 'ioredis-sentinel') {
    const client = workerSentinelClient(url, name);
    return { client, ioredis: client, close: () => client.disconnect() };
  }
  if (kind === 'ioredis-cluster') {
    const client = workerClusterClient(url, name);
    // NOTE: planted bugs send their few commands by key (EVAL, CALL): a Cluster routes them like a Redis does.
    return { client, ioredis: client as unknown as Redis, close: () => client.disconnect() };
  }
  if (kind === 'node-redis') {
    const client = await workerNodeRedisClient(url, name);
    return { client, ioredis: null, close: () => client.destroy() };
  }
  const client = workerRedisClient(url, name);
  return { client, ioredis: client, close: () => client.disconnect() };
}

/** Builds the worker's backend on `kind`; `wrap` swaps in a planted bug (mutants.ts; ioredis only). */
export async function createRedisBackend(
  url: string,
  proc: string,
  kind: ClientKind = 'ioredis',
  wrap?: (store: Store<RedisWriteContext>, client: Redis) => Store<RedisWriteContext>,
): Promise<WorkerBackend> {
  const connection = await workerClient(kind, url, `chaos-${proc.replace('.', '-')}`);
  const { client } = connection;
  const real = createRedisStore({ client });
  if (wrap !== undefined && connection.ioredis === null) throw new Error('planted bugs run on ioredis');
  const store = wrap === undefined || connection.ioredis === null ? real : wrap(real, connection.ioredis);
  const gate = createRedisTokenGate({ client });
  return {
    store: store as Store,
    gate: gate as WorkerBackend['gate'],
    appendUnderFence: (leases: Leases, lease: Lease, entry: string) =>
      leases.fencedWrite(lease, (tx) => {
        void (tx as RedisWriteContext).call('RPUSH', ledgerKey(lease.key), entry);
      }),
    appendThroughGate: (leases: Leases, lease: Lease, resource: string, entry: string) =>
      // NOTE: the Redis gate's outcome includes the fence's refusal (issue 9.5); the cast goes once the contract's does.
      leases.gateWrite(gate, resource, lease, (tx) => {
        void tx.call('RPUSH', gateLedgerKey(resource), entry);
      }),
    close: async () => {
      connection.close();
    },
  };
}

/** The harness's admin connection. */
export function createRedisAdmin(url: string): StoreAdmin & { scriptFlush(): Promise<void>; client: Redis | Cluster } {
  const seeds = clusterSeeds(url);
  const client =
    seeds !== null
      ? // NOTE: the final read may come right after a failover: give the client time to find the new master
        // (a 1.5 s bound once failed a 10-minute run with a harness error, the inspect timed out).
        workerClusterClient(url, 'chaos-admin', 15_000)
      : sentinelsOf(url) !== null
        ? workerSentinelClient(url, 'chaos-admin')
        : new Redis(url, { connectionName: 'chaos-admin', maxRetriesPerRequest: 20, retryStrategy: () => 50 });
  client.on('error', () => undefined);
  const store = createRedisStore({ client });
  const operator = createLeases(store, { holder: 'chaos-operator' });
  return {
    client,
    revoke: async (key) => (await operator.revoke(key, { reason: 'chaos: operator revoke', by: 'chaos-operator' })).ok,
    forceExpire: async (key) => {
      await client.eval(EXPIRE_NOW_SCRIPT, 1, redisRecordKey(key));
    },
    killConnections: async () => {
      // NOTE: the cluster scenarios kill masters instead.
      if (client instanceof Cluster) return 0;
      // NOTE: only the chaos workers' connections (by name), so tests sharing this server are not hit.
      const list = String(await client.call('CLIENT', 'LIST', 'TYPE', 'normal'));
      const ids = [...list.matchAll(/^id=(\d+) .*\bname=chaos-w\S*/gm)].map((match) => match[1] as string);
      let killed = 0;
      for (const id of ids) killed += Number(await client.call('CLIENT', 'KILL', 'ID', id, 'TYPE', 'normal'));
      return killed;
    },
    scriptFlush: async () => {
      await client.call('SCRIPT', 'FLUSH');
    },
    readFinal: (keys) =>
      Promise.all(
        keys.map(async (key) =>
          finalKeyState(
            key,
            await store.inspect(key),
            await client.lrange(ledgerKey(key), 0, -1),
            await client.lrange(gateLedgerKey(resourceOf(key)), 0, -1),
          ),
        ),
      ),
    close: async () => {
      client.disconnect();
    },
  };
}
