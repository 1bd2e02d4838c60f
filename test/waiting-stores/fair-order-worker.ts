/**
 * One waiting process of the fair-order test and the fair-handoff benchmark (run with `node --import tsx`): on each
 * `go` message from its parent it starts one waiting claim of the key (`claim` with `wait`), and reports the grant
 * (its token, and when it arrived on the machine's clock), holds the key `holdMs`, reports the moment it starts
 * releasing, releases, and reports that. `exit` ends it. PostgreSQL and Redis wake it with their notifications;
 * SQLite has none, so it polls every `pollMs`.
 */
import { createRequire } from 'node:module';
import { Redis } from 'ioredis';
import pg from 'pg';
import { createLeases } from '../../src/leases.js';
import { createPostgresStore } from '../../src/adapters/postgres/index.js';
import { createRedisStore } from '../../src/adapters/redis/index.js';
import { createSqliteStore, type SqliteClient } from '../../src/adapters/sqlite/index.js';
import type { Store } from '../../src/store.js';
import { pgListenerFactory } from '../support/pg-listener.js';

/** What the parent passes (JSON in argv[2]). */
export interface FairOrderSetup {
  readonly proc: number;
  readonly store: 'redis' | 'postgres' | 'sqlite';
  /** Redis or PostgreSQL URL, or the SQLite file. */
  readonly url: string;
  /** Redis key prefix, or the PostgreSQL / SQLite table. */
  readonly namespace: string;
  readonly key: string;
  readonly holdMs: number;
  readonly pollMs: number;
  /** The waiting claims' `queueTtlMs` (absent: the default, the claim's TTL). */
  readonly queueTtlMs?: number;
}

/** What the worker tells its parent (`at`: epoch ms with sub-ms digits, the same clock in every process). */
export type FairOrderMessage =
  | { readonly type: 'ready'; readonly proc: number }
  | { readonly type: 'granted'; readonly proc: number; readonly token: string; readonly at: number }
  | { readonly type: 'releasing'; readonly proc: number; readonly at: number }
  | { readonly type: 'released'; readonly proc: number }
  | { readonly type: 'refused'; readonly proc: number; readonly reason: string };

/** Now on the machine's clock, with sub-millisecond digits, comparable across processes. */
export const wallNow = (): number => performance.timeOrigin + performance.now();

const setup = JSON.parse(process.argv[2] ?? '{}') as FairOrderSetup;
const send = (message: FairOrderMessage): void => void process.send?.(message);
const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));

/** The store of this process, with its notification connection where the store has one. */
async function openStore(): Promise<{ store: Store; close: () => Promise<void> }> {
  if (setup.store === 'redis') {
    const client = new Redis(setup.url, { maxRetriesPerRequest: null });
    const subscriber = client.duplicate();
    return {
      store: createRedisStore({ client, subscriber, prefix: setup.namespace }),
      close: async () => {
        client.disconnect();
        subscriber.disconnect();
      },
    };
  }
  if (setup.store === 'postgres') {
    const pool = new pg.Pool({ connectionString: setup.url, max: 2 });
    const { listener, close } = pgListenerFactory(setup.url);
    return {
      store: createPostgresStore({ client: pool, table: setup.namespace, listener }),
      close: async () => {
        await close();
        await pool.end();
      },
    };
  }
  const require = createRequire(import.meta.url);
  const database = new (require('better-sqlite3') as new (path: string) => SqliteClient & { close(): unknown })(setup.url);
  return {
    store: createSqliteStore({ client: database, table: setup.namespace, busyTimeoutMs: 10_000 }),
    close: async () => void database.close(),
  };
}

const { store, close } = await openStore();
const leases = createLeases(store, { holder: `p${setup.proc}`, ttlMs: 30_000 });

process.on('message', (message: string) => {
  if (message === 'exit') {
    void close().then(() => process.exit(0));
    return;
  }
  void (async () => {
    const wait = { timeoutMs: 30_000, pollMs: setup.pollMs, ...(setup.queueTtlMs === undefined ? {} : { queueTtlMs: setup.queueTtlMs }) };
    const claimed = await leases.claim(setup.key, { wait });
    if (!claimed.ok) {
      send({ type: 'refused', proc: setup.proc, reason: claimed.reason });
      return;
    }
    send({ type: 'granted', proc: setup.proc, token: claimed.lease.token.toString(), at: wallNow() });
    await sleep(setup.holdMs);
    send({ type: 'releasing', proc: setup.proc, at: wallNow() });
    await leases.release(claimed.lease);
    send({ type: 'released', proc: setup.proc });
  })();
});
send({ type: 'ready', proc: setup.proc });
