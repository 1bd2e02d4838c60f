/**
 * The Redis store's harness for the shared suites, for both clients (ioredis and node-redis), on a real
 * redis-server: the run's shared server (`LEASEFENCE_REDIS_URL`, from the global setup) or, when a file
 * runs alone, one this worker starts. Each harness works under its own key prefix; `connect()` opens a
 * new client (a real connection of its own); the ledger is a Redis list RPUSHed inside the fence script;
 * `expireNow` rewrites the grant's stored expires-at (in the `lease` field, see scripts.ts) to the server's `TIME`.
 */
import { Redis } from 'ioredis';
import { Redis as Redis6 } from 'ioredis6';
import { createClient } from 'redis';
import { createClient as createClient6 } from 'redis6';
import { randomBytes } from 'node:crypto';
import { createRedisStore, hashTagOf, type RedisClient, type RedisStore } from '../../src/adapters/redis/index.js';
import { keyNames } from '../../src/adapters/redis/keys.js';
import { toConnection, type RedisConnection } from '../../src/adapters/redis/connection.js';
import * as lua from '../../src/adapters/redis/scripts.js';
import { FENCED_WRITE_SCRIPT } from '../../src/adapters/redis/write-scripts.js';
import type { StoreHarness } from '../../src/testing/index.js';
import { startRedis, type RedisServer } from '../support/redis-server.js';
import { EXPIRE_NOW_SCRIPT } from '../support/redis-expire.js';

/** The Redis clients leasefence supports: ioredis 5 and 6 (installed as `ioredis6`), node-redis 5 and 6 (as `redis6`). */
export type RedisClientKind = 'ioredis' | 'ioredis6' | 'node-redis' | 'node-redis6';

export type { RedisStore };

/** The lease scripts by operation name, as the reference scripts are kept (see redis-reference-scripts.ts). */
export const CURRENT_SCRIPTS: Readonly<Record<string, string>> = {
  claim: lua.CLAIM_SCRIPT,
  renew: lua.RENEW_SCRIPT,
  checkpoint: lua.CHECKPOINT_SCRIPT,
  release: lua.RELEASE_SCRIPT,
  revoke: lua.REVOKE_SCRIPT,
  recover: lua.RECOVER_SCRIPT,
  inspect: lua.INSPECT_SCRIPT,
  'fenced write': FENCED_WRITE_SCRIPT,
};

let ownServer: Promise<RedisServer> | null = null;

/** The URL of the run's shared redis-server, or of one started for this test worker (stopped at exit). */
export async function sharedRedisUrl(): Promise<string> {
  const url = process.env['LEASEFENCE_REDIS_URL'];
  if (url !== undefined && url !== '') return url;
  ownServer ??= startRedis({ persistence: 'aof' });
  return (await ownServer).url;
}

/** A connected client of `kind` with its `close()`. Errors are observed (node-redis would throw them otherwise). */
export async function openClient(
  kind: RedisClientKind,
  url: string,
  ioredisOptions: Record<string, unknown> = {},
): Promise<{ client: RedisClient; close: () => Promise<void> }> {
  if (kind === 'ioredis' || kind === 'ioredis6') {
    const client =
      kind === 'ioredis'
        ? new Redis(url, { lazyConnect: true, ...ioredisOptions })
        : new Redis6(url, { lazyConnect: true, ...ioredisOptions });
    client.on('error', () => undefined);
    await client.connect();
    return { client, close: async () => void client.disconnect() };
  }
  const client = kind === 'node-redis' ? createClient({ url }) : createClient6({ url });
  client.on('error', () => undefined);
  await client.connect();
  return { client, close: async () => void (client.isOpen ? await client.close() : undefined) };
}

/** A prefix no other test uses. */
/** The ready index of a claim-next set (`<prefix>{<set>}:ready`): each item key with its score, its availability. */
export async function readyIndex(raw: RedisConnection, prefix: string, set: string): Promise<Record<string, number>> {
  const scored = (await raw.send(['ZRANGE', `${prefix}{${set}}:ready`, '0', '-1', 'WITHSCORES'])) as string[];
  const index: Record<string, number> = {};
  for (let at = 0; at < scored.length; at += 2) index[scored[at] as string] = Number(scored[at + 1]);
  return index;
}

export const freshPrefix = (label = 'lf'): string => `${label}:${randomBytes(6).toString('hex')}:`;

/** Builds a harness factory for one client kind. */
export function makeRedisHarness(kind: RedisClientKind): () => Promise<StoreHarness<RedisStore>> {
  return async () => {
    const url = await sharedRedisUrl();
    const prefix = freshPrefix(`lf-${kind}`);
    const names = keyNames(prefix);
    const closers: Array<() => Promise<void>> = [];
    const open = async (): Promise<{ client: RedisClient; store: RedisStore }> => {
      const { client, close } = await openClient(kind, url);
      closers.push(close);
      return { client, store: createRedisStore({ client, prefix }) };
    };
    const main = await open();
    const raw = toConnection(main.client);
    const ledgerKey = (key: string): string => `${prefix}ledger:${hashTagOf(key)}`;
    let keys = 0;
    return {
      store: main.store,
      connect: async () => (await open()).store,
      appendUnderFence: (leases, lease, entry, options) =>
        leases.fencedWrite(lease, (tx) => tx.call('RPUSH', ledgerKey(lease.key), entry), options),
      fencedAppend: (fence, entry, options, refuse) =>
        main.store.fencedWrite(
          fence,
          (tx) => {
            tx.call('RPUSH', ledgerKey(fence.key), entry);
            // NOTE: judged in the script after the fence, before any recorded command: the RPUSH is never sent.
            if (refuse !== undefined) tx.refuse(refuse.code, refuse.detail);
          },
          options,
        ),
      readLedger: async (key) => (await raw.send(['LRANGE', ledgerKey(key), '0', '-1'])) as string[],
      expireNow: async (key) => void (await raw.send(['EVAL', EXPIRE_NOW_SCRIPT, '1', names.record(key, 'lease')])),
      advanceClock: null,
      freshKey: (label = 'key') => `${label}:${++keys}:${randomBytes(4).toString('hex')}`,
      close: async () => void (await Promise.all(closers.map((close) => close()))),
    };
  };
}
