/**
 * `leaseCommit: 'fast'` (lease-commit.ts), on a cluster of this file's own, which it crashes: the option is
 * checked before any I/O; only the lease-only statements (claim, renew, a release that keeps the checkpoint)
 * turn synchronous_commit off, never a fenced write, a checkpoint or a release that saves one; a grant
 * acknowledged just before a crash may be forgotten, and then its holder is refused and the next grant's
 * token is still greater (clock-floored); and a durable commit after a fast one keeps both.
 *
 * NOTE: the server's WAL writer wakes every 10 s (`wal_writer_delay`, its maximum) and nothing else flushes
 * the WAL (no background writer pages, no autovacuum), so a fast commit stays unflushed until the crash that
 * follows it within milliseconds: the loss is observed, not assumed.
 *
 * The shared suites run on the fast statements too (on the run's shared cluster): they decide as the durable ones.
 */
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createPostgresStore, type PostgresClient, type PostgresStore } from '../../src/adapters/postgres/index.js';
import { InvalidArgumentError } from '../../src/errors.js';
import { createLeases } from '../../src/leases.js';
import { describeStoreSuites } from '../../src/testing/index.js';
import { vitestRunner } from '../conformance/vitest-runner.js';
import { startPostgres, type PostgresServer } from '../support/postgres-server.js';
import { makePostgresHarness } from './postgres-harness.js';

const ASYNC_COMMIT = `set_config('synchronous_commit', 'off', true)`;

describe('postgres leaseCommit', () => {
  let server: PostgresServer;
  beforeAll(async () => {
    server = await startPostgres({
      settings: { wal_writer_delay: '10000', bgwriter_lru_maxpages: '0', autovacuum: 'off', checkpoint_timeout: '1d' },
    });
    await withStore('durable', (store) => store.migrate());
  });
  afterAll(async () => {
    await server?.stop();
  });

  /** A new pool (the old one's connections die with a crash) and a store with `leaseCommit`, recording what it sends. */
  async function withStore<T>(
    leaseCommit: 'durable' | 'fast',
    run: (store: PostgresStore, sent: string[], pool: pg.Pool) => Promise<T>,
    prepare = true,
  ): Promise<T> {
    const pool = new pg.Pool({ connectionString: server.url, max: 2 });
    pool.on('error', () => undefined);
    const sent: string[] = [];
    const record = (queryable: { query: (...args: never[]) => unknown }) =>
      ((config: string | { text: string }, values?: unknown[]) => {
        sent.push(typeof config === 'string' ? config : config.text);
        return (queryable.query as (config: unknown, values?: unknown[]) => unknown)(config, values);
      }) as PostgresClient['query'];
    const client = {
      acceptsNamedStatements: true,
      query: record(pool as never),
      connect: async () => {
        const connection = await pool.connect();
        return { query: record(connection as never), release: (error?: Error) => connection.release(error) };
      },
    } as unknown as PostgresClient;
    try {
      return await run(createPostgresStore({ client, leaseCommit, prepare }), sent, pool);
    } finally {
      await pool.end();
    }
  }

  it('is checked before any I/O: only durable or fast', () => {
    let queried = 0;
    const query = async () => {
      queried += 1;
      return { rows: [] };
    };
    const client = { query } as unknown as PostgresClient;
    for (const leaseCommit of ['async', 'off', true, 0, null]) {
      expect(() => createPostgresStore({ client, leaseCommit: leaseCommit as never })).toThrow(InvalidArgumentError);
    }
    expect(() => createPostgresStore({ client, leaseCommit: 'fast' })).not.toThrow();
    expect(() => createPostgresStore({ client, leaseCommit: 'durable' })).not.toThrow();
    expect(queried).toBe(0);
  });

  it('turns synchronous_commit off in claim, renew and a release that keeps the checkpoint, and in nothing else', async () => {
    await withStore('fast', async (store, sent) => {
      const leases = createLeases(store, { holder: 'w', ttlMs: 60_000 });
      const uses = async (run: () => Promise<unknown>): Promise<boolean[]> => {
        sent.length = 0;
        await run();
        return sent.map((text) => text.includes(ASYNC_COMMIT));
      };
      const lease = await leases.claimOrThrow('which');
      expect(await uses(() => leases.claimOrThrow('which-2'))).toEqual([true]);
      expect(await uses(() => leases.renew(lease))).toEqual([true]);
      // NOTE: fenced writes of user data and everything that saves a checkpoint commit durably.
      const written = await uses(() => leases.fencedWrite(lease, (tx) => tx.query('SELECT 1')));
      expect(written.length).toBeGreaterThan(1);
      expect(written.every((fast) => !fast)).toBe(true);
      expect(await uses(() => leases.fencedWrite(lease, (tx) => tx.query('SELECT 1'), { checkpoint: { step: 1 } }))).not.toContain(true);
      expect(await uses(() => store.fencedStatement(lease, 'SELECT fence.key FROM fence'))).not.toContain(true);
      expect(await uses(() => leases.checkpoint(lease, { step: 2 }))).toEqual([false]);
      expect(await uses(() => leases.revoke('which-2', { reason: 'test' }))).toEqual([false]);
      expect(await uses(() => leases.inspect('which'))).toEqual([false]);
      const other = await leases.claimOrThrow('which-3');
      expect(await uses(() => leases.release(other, { checkpoint: { done: true } }))).toEqual([false]);
      const cleared = await leases.claimOrThrow('which-3');
      expect(await uses(() => leases.release(cleared, { checkpoint: null }))).toEqual([false]);
      expect(await uses(() => leases.release(lease))).toEqual([true]);
    });
    await withStore('durable', async (store, sent) => {
      const leases = createLeases(store, { holder: 'w', ttlMs: 60_000 });
      const lease = await leases.claimOrThrow('which-durable');
      await leases.renewOrThrow(lease);
      await leases.release(lease);
      expect(sent.length).toBe(3);
      expect(sent.some((text) => text.includes(ASYNC_COMMIT))).toBe(false);
    });
  });

  it('with prepare: false, the claim (a call of the claim function) turns it off too', async () => {
    await withStore(
      'fast',
      async (store, sent) => {
        const leases = createLeases(store, { holder: 'w', ttlMs: 60_000 });
        const lease = await leases.claimOrThrow('unprepared');
        expect(sent.filter((text) => text.includes(ASYNC_COMMIT)).length).toBe(1);
        expect((await leases.release(lease)).ok).toBe(true);
      },
      false,
    );
  });

  it('a fast grant acknowledged just before a crash may be forgotten: its holder is refused and the next token is greater', async () => {
    const forgotten = await withStore('fast', async (store) => {
      const lease = await createLeases(store, { holder: 'first', ttlMs: 60_000 }).claimOrThrow('crash');
      await server.restart('immediate');
      return lease;
    });
    await withStore('fast', async (store) => {
      const leases = createLeases(store, { holder: 'second', ttlMs: 60_000 });
      // NOTE: the commit was acknowledged before its WAL was flushed: the crash forgot it (no grant at all).
      expect((await leases.inspect('crash')).grant).toBeNull();
      expect((await leases.renew(forgotten)).ok).toBe(false);
      expect((await leases.fencedWrite(forgotten, () => 'written')).ok).toBe(false);
      const successor = await leases.claimOrThrow('crash');
      expect(successor.token > forgotten.token).toBe(true);
    });
  });

  it('a durable grant, and a fast grant followed by its holder\u2019s fenced write, survive a crash', async () => {
    const [durable, written] = await withStore('durable', async (durableStore) =>
      withStore('fast', async (fastStore) => {
        const durable = await createLeases(durableStore, { holder: 'd', ttlMs: 60_000 }).claimOrThrow('crash-durable');
        const leases = createLeases(fastStore, { holder: 'f', ttlMs: 60_000 });
        const written = await leases.claimOrThrow('crash-written');
        // NOTE: the fenced write's durable commit flushes the WAL up to its own record, past the fast grant's.
        expect((await leases.fencedWrite(written, () => 'written')).ok).toBe(true);
        await server.restart('immediate');
        return [durable, written] as const;
      }),
    );
    await withStore('fast', async (store) => {
      const leases = createLeases(store, { holder: 'after', ttlMs: 60_000 });
      expect((await leases.inspect('crash-durable')).grant?.token).toBe(durable.token);
      expect((await leases.inspect('crash-written')).grant?.token).toBe(written.token);
    });
  });
});

describeStoreSuites(vitestRunner, "postgres (pg Pool, leaseCommit: 'fast')", makePostgresHarness('pg-pool', { leaseCommit: 'fast' }), {
  modelRuns: 100,
  raceRuns: 150,
  workers: 4,
});
