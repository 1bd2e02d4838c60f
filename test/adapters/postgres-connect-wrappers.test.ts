/**
 * Issue 29 item 17: a pg Pool whose `connect` is wrapped (tracing, metrics, retry wrappers) works on a real
 * server in every common shape, with no operation hanging and no connection left checked out. leasefence
 * checks out with pg-pool's callback form (so it listens for `error` from the instant of hand-over, see
 * postgres-checkout-error.test.ts); a `connect` that takes the callback and also returns a promise settles
 * the checkout once, with whichever hands a connection over first, and a second connection is released.
 */
import pg from 'pg';
import { afterAll, describe, expect, it } from 'vitest';
import { createPostgresStore, type PostgresClient } from '../../src/adapters/postgres/index.js';
import { createLeases } from '../../src/leases.js';
import { freshTable, sharedPostgresUrl } from './postgres-harness.js';

type Connect = pg.Pool['connect'];
type Callback = (error: Error | undefined, client?: pg.PoolClient, done?: (release?: unknown) => void) => void;

/** `pool.connect` replaced by `wrap(original)`, the shapes instrumentation gives it. */
const WRAPPERS: Record<string, (original: Connect, pool: pg.Pool) => (...args: unknown[]) => unknown> = {
  // NOTE: the usual instrumentation shape: passes every argument on, returns what the original returned,
  // as a promise (of undefined in the callback form, resolved before the callback delivers the client).
  'async pass-through':
    (original, pool) =>
    async (...args: unknown[]) =>
      (original as (...params: unknown[]) => unknown).apply(pool, args),
  'callback-only (returns nothing)': (original, pool) => (callback: unknown) => {
    void (original as (cb: Callback) => void).call(pool, callback as Callback);
  },
  'promise-only (ignores the callback)': (original, pool) => async () => (original as () => Promise<pg.PoolClient>).call(pool),
  'both: calls back and resolves the same client': (original, pool) => (callback: unknown) =>
    new Promise((resolve, reject) => {
      (original as (cb: Callback) => void).call(pool, (error, client, done) => {
        (callback as Callback)(error, client, done);
        if (error === undefined || error === null) resolve(client);
        else reject(error);
      });
    }),
  'both: calls back with one client and resolves another': (original, pool) => (callback: unknown) => {
    (original as (cb: Callback) => void).call(pool, callback as Callback);
    return (original as () => Promise<pg.PoolClient>).call(pool);
  },
};

const pools: pg.Pool[] = [];
afterAll(async () => {
  for (const pool of pools) await pool.end();
});

/** Rejects if `promise` has not settled within `ms` (a hang is the failure under test). */
const within = <T>(what: string, promise: Promise<T>, ms = 5_000): Promise<T> =>
  Promise.race([promise, new Promise<never>((_, reject) => setTimeout(() => reject(new Error(`${what} hung for ${ms} ms`)), ms))]);

describe('a pg Pool with a wrapped connect', () => {
  it.each(Object.keys(WRAPPERS))(
    '%s: migrate, claim, fenced write, inspect and release complete; no connection stays checked out',
    async (shape) => {
      const pool = new pg.Pool({ connectionString: await sharedPostgresUrl(), max: 3 });
      pool.on('error', () => undefined);
      pools.push(pool);
      const original = pool.connect;
      pool.connect = WRAPPERS[shape]!(original, pool) as Connect;
      const store = createPostgresStore({ client: pool as unknown as PostgresClient, table: freshTable('lf_wrap') });
      await within('migrate', store.migrate());
      const leases = createLeases(store, { holder: 'w1' });
      for (let round = 0; round < 5; round += 1) {
        const claimed = await within('claim', leases.claimOrThrow(`job:${round}`));
        expect(
          await within(
            'fenced write',
            leases.fencedWrite(claimed, async (tx) => (await tx.query('SELECT 1 AS n')).rows),
          ),
        ).toMatchObject({ ok: true, value: [{ n: 1 }] });
        expect((await within('inspect', leases.inspect(claimed.key))).grant).toMatchObject({ token: claimed.token });
        expect(await within('release', leases.release(claimed))).toMatchObject({ ok: true });
      }
      // NOTE: a released connection is idle at once; a leaked one stays counted but never idle.
      await new Promise((resolve) => setTimeout(resolve, 50));
      expect(pool.totalCount - pool.idleCount).toBe(0);
    },
  );
});
