/**
 * Postgres specs on a cluster of this file's own (they restart it, and count statements server-side with
 * pg_stat_statements): tokens are never reused across a restart, requests during a crash-restart fail
 * typed, an unreachable server gives StoreUnavailableError, and the server sees one statement per operation.
 */
import pg from 'pg';
import postgres from 'postgres';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { createPostgresStore, fromPostgresJs, type PostgresStore } from '../../src/adapters/postgres/index.js';
import { isStoreFailure, StoreUnavailableError } from '../../src/errors.js';
import type { Lease } from '../../src/lease.js';
import { createLeases } from '../../src/leases.js';
import type { Leases } from '../../src/leases-types.js';
import { startPostgres, type PostgresServer } from '../support/postgres-server.js';
import { freshTable } from './postgres-harness.js';

describe('postgres adapter on its own server', () => {
  let server: PostgresServer;
  beforeAll(async () => {
    server = await startPostgres({ settings: { shared_preload_libraries: 'pg_stat_statements' } });
  });
  afterAll(async () => {
    await server?.stop();
  });

  const withPool = async <T>(run: (pool: pg.Pool, store: PostgresStore) => Promise<T>, table = 'leasefence_leases'): Promise<T> => {
    const pool = new pg.Pool({ connectionString: server.url, max: 2 });
    pool.on('error', () => undefined);
    try {
      return await run(pool, createPostgresStore({ client: pool, table }));
    } finally {
      await pool.end();
    }
  };

  it('never reuses a token across clean and crash restarts of the server, after release, revoke and expiry', async () => {
    const key = 'restart';
    const tokens: bigint[] = [];
    // NOTE: a new pool after every restart: the old pool's connections died with the server.
    const grantThen = (end: 'release' | 'revoke' | 'expire' | 'keep') =>
      withPool(async (_, store) => {
        await store.migrate();
        const leases = createLeases(store, { holder: 'w', ttlMs: 100 });
        const lease = await leases.claimOrThrow(key);
        tokens.push(lease.token);
        if (end === 'release') await leases.release(lease);
        if (end === 'revoke') await leases.revoke(key, { reason: 'before the crash' });
        if (end === 'expire') await new Promise((resolve) => setTimeout(resolve, 150));
      });
    await grantThen('release');
    await server.restart('fast');
    await grantThen('revoke');
    await server.restart('immediate');
    await grantThen('expire');
    await server.restart('immediate');
    await grantThen('keep');
    await server.restart('fast');
    await withPool(async (_, store) => {
      expect(await createLeases(store, { holder: 'w' }).inspect(key)).toMatchObject({ token: tokens[3], grant: { token: tokens[3] } });
    });
    // NOTE: strictly increasing, and the revoke burned one (tokens are floored by the clock: not consecutive).
    expect(tokens[1]! > tokens[0]! && tokens[2]! >= tokens[1]! + 2n && tokens[3]! > tokens[2]!).toBe(true);
  });

  it('requests during a crash-restart either apply or fail typed, and tokens keep increasing', async () => {
    await withPool(async (_, store) => {
      await store.migrate();
      // NOTE: a claim applied just before the crash, whose reply was lost, leaves a grant nobody knows of:
      // a short TTL lets the loop take the key again once it expires.
      const leases = createLeases(store, { holder: 'w', ttlMs: 3_000 });
      const key = 'crash-loop';
      const granted: bigint[] = [];
      const failures: unknown[] = [];
      let stop = false;
      // NOTE: a release cut off by the crash leaves the grant held for its TTL: like a real worker, the loop
      // releases the same grant again (release is idempotent for one grant) before it claims anew.
      let held: Lease | null = null;
      const loop = (async () => {
        while (!stop) {
          try {
            if (held === null) {
              held = await leases.claimOrThrow(key);
              granted.push(held.token);
            }
            await leases.release(held);
            held = null;
          } catch (error) {
            failures.push(error);
            await new Promise((resolve) => setTimeout(resolve, 10));
          }
        }
      })();
      // NOTE: conditions, not durations: three grants before the crash, then a grant again after it, however
      // slow the machine (the re-release and the short TTL above keep the key from staying blocked).
      await vi.waitUntil(() => granted.length >= 3, { timeout: 30_000, interval: 10 });
      await server.restart('immediate');
      const grantedBeforeRecovery = granted.length;
      await vi.waitUntil(() => failures.length > 0 && granted.length > grantedBeforeRecovery, { timeout: 30_000, interval: 10 });
      stop = true;
      await loop;
      expect(failures.length).toBeGreaterThan(0);
      for (const failure of failures) expect(isStoreFailure(failure) || (failure as Error).name === 'LeaseBusyError').toBe(true);
      expect(granted.length).toBeGreaterThan(2);
      for (let i = 1; i < granted.length; i += 1) expect(granted[i]! > granted[i - 1]!).toBe(true);
      const after = await leases.inspect(key);
      expect(after.token >= granted[granted.length - 1]!).toBe(true);
    });
  });

  it('an unreachable server gives StoreUnavailableError for every operation, with pg and postgres.js, and no callback runs', async () => {
    const lease = await withPool(async (_, store) => {
      await store.migrate();
      return createLeases(store, { holder: 'w' }).claimOrThrow('unreachable');
    });
    const dead = `postgres://postgres@127.0.0.1:1/postgres`;
    // NOTE: a fresh client per attempt: postgres.js backs off exponentially between reconnection attempts.
    const clients = {
      pg: () => {
        const pool = new pg.Pool({ connectionString: dead, connectionTimeoutMillis: 2_000 });
        return { client: pool, close: () => pool.end() };
      },
      'postgres.js': () => {
        const sql = postgres(dead, { connect_timeout: 2, max: 1 });
        return { client: fromPostgresJs(sql), close: () => sql.end({ timeout: 1 }) };
      },
    };
    for (const open of Object.values(clients)) {
      let called = false;
      const attempts: Array<(store: PostgresStore, leases: Leases<PostgresStore>, handle: Lease) => Promise<unknown>> = [
        (_, leases) => leases.claim('unreachable'),
        (_, leases, handle) => leases.renew(handle),
        (_, leases, handle) => leases.checkpoint(handle, { x: 1 }),
        (_, leases, handle) => leases.fencedWrite(handle, () => (called = true)),
        (store, _, handle) => store.fencedStatement(handle, 'SELECT 1 FROM fence'),
        (_, leases, handle) => leases.release(handle),
        (_, leases) => leases.revoke('unreachable', { reason: 'x' }),
        (_, leases) => leases.inspect('unreachable'),
        (store) => store.migrate(),
      ];
      for (const attempt of attempts) {
        const { client, close } = open();
        const store = createPostgresStore({ client });
        const leases = createLeases(store, { holder: 'w' });
        try {
          await expect(attempt(store, leases, leases.restore(lease.export()))).rejects.toThrow(StoreUnavailableError);
        } finally {
          await close();
        }
      }
      expect(called).toBe(false);
    }
    await withPool(async (_, store) => {
      expect(await createLeases(store, { holder: 'w' }).inspect('unreachable')).toMatchObject({
        token: lease.token,
        grant: { holder: 'w' },
      });
    });
  });

  it('the server sees exactly one statement per operation (pg_stat_statements), and BEGIN, one lock, the write and COMMIT per fenced write', async () => {
    const admin = new pg.Client({ connectionString: server.url });
    await admin.connect();
    try {
      await admin.query('CREATE EXTENSION IF NOT EXISTS pg_stat_statements');
      const database = freshTable('counted');
      await admin.query(`CREATE DATABASE ${database}`);
      const { rows } = await admin.query<{ oid: number }>('SELECT oid FROM pg_database WHERE datname = $1', [database]);
      const dbid = rows[0]!.oid;
      const calls = async (): Promise<number> =>
        Number(
          (await admin.query<{ n: string }>('SELECT coalesce(sum(calls), 0)::text AS n FROM pg_stat_statements WHERE dbid = $1', [dbid]))
            .rows[0]!.n,
        );
      const pool = new pg.Pool({ connectionString: server.url.replace(/\/postgres$/, `/${database}`), max: 1 });
      try {
        const store = createPostgresStore({ client: pool });
        await store.migrate();
        await pool.query('CREATE TABLE out (token bigint)');
        const a = createLeases(store, { holder: 'a' });
        const b = createLeases(store, { holder: 'b' });
        let lease = null as unknown as Lease;
        const steps: Array<[string, number, () => Promise<unknown>]> = [
          ['claim', 1, async () => (lease = await a.claimOrThrow('k'))],
          ['claim (held)', 1, () => b.claim('k')],
          ['renew', 1, () => a.renew(lease)],
          ['checkpoint', 1, () => a.checkpoint(lease, { step: 1 })],
          ['fenced statement', 1, () => store.fencedStatement(lease, 'INSERT INTO out SELECT token FROM fence RETURNING token')],
          ['fenced write', 4, () => a.fencedWrite(lease, (tx) => tx.query('INSERT INTO out VALUES ($1)', [tx.token.toString()]))],
          ['inspect', 1, () => a.inspect('k')],
          ['revoke', 1, () => a.revoke('k', { reason: 'r', requireRecovery: true })],
          ['claim (recovering)', 1, async () => (lease = await b.claimOrThrow('k', { recovering: true }))],
          ['recover', 1, () => b.recover(lease, 'discard')],
          ['release', 1, () => b.release(lease)],
        ];
        for (const [name, expected, run] of steps) {
          const before = await calls();
          await run();
          // NOTE: the counting query itself runs in another database, so only the store's statements count.
          expect({ name, statements: (await calls()) - before }).toEqual({ name, statements: expected });
        }
      } finally {
        await pool.end();
      }
    } finally {
      await admin.end();
    }
  });
});
