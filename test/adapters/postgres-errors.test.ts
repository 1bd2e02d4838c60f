/**
 * Postgres errors that say what to do (issue 8 item 8) and never carry a secret (issue 9.2): a
 * never-migrated table names `store.migrate()`, a lock wait is reported as contention, and no failure path
 * (server error, timeout, connection loss) puts the lease secret into a leasefence error's message, cause
 * chain, `util.inspect` or `JSON.stringify`.
 */
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createPostgresStore } from '../../src/adapters/postgres/index.js';
import { isLeaseError, isStoreFailure } from '../../src/errors.js';
import { createLeases } from '../../src/leases.js';
import { freshTable, sharedPostgresUrl } from './postgres-harness.js';

describe('postgres errors (pg Pool)', () => {
  let url: string;
  let pool: pg.Pool;
  beforeAll(async () => {
    url = await sharedPostgresUrl();
    pool = new pg.Pool({ connectionString: url, max: 4 });
    pool.on('error', () => undefined);
  });
  afterAll(async () => {
    await pool?.end();
  });

  it('a never-migrated table gives STORE_UNAVAILABLE naming store.migrate() on every operation; a missing table of yours propagates as it is', async () => {
    const store = createPostgresStore({ client: pool, table: freshTable('lf_never') });
    const leases = createLeases(store, { holder: 'a' });
    for (const [name, run] of [
      ['claim', () => leases.claim('k')],
      ['inspect', () => leases.inspect('k')],
      ['revoke', () => leases.revoke('k', { reason: 'r' })],
    ] as const) {
      const error = await run().then(
        () => null,
        (thrown: unknown) => thrown,
      );
      expect({ name, typed: isLeaseError(error, 'STORE_UNAVAILABLE') }).toEqual({ name, typed: true });
      expect((error as Error).message).toContain('await store.migrate()');
    }
    const migrated = createPostgresStore({ client: pool, table: freshTable('lf_yours') });
    await migrated.migrate();
    const holder = createLeases(migrated, { holder: 'a' });
    const lease = await holder.claimOrThrow('k');
    const yours = await holder
      .fencedWrite(lease, (tx) => tx.query('INSERT INTO no_such_table_of_yours VALUES (1)'))
      .then(
        () => null,
        (thrown: unknown) => thrown,
      );
    expect(yours).toMatchObject({ code: '42P01' });
    expect(isLeaseError(yours)).toBe(false);
  });

  it('a lock wait that times out is reported as contention (nothing applied), not as an outage', async () => {
    const contended = new pg.Pool({ connectionString: url, max: 4, lock_timeout: 100 });
    contended.on('error', () => undefined);
    try {
      const store = createPostgresStore({ client: contended, table: freshTable('lf_contention') });
      await store.migrate();
      const leases = createLeases(store, { holder: 'a' });
      const lease = await leases.claimOrThrow('k');
      let release!: () => void;
      const held = new Promise<void>((resolve) => (release = resolve));
      let entered!: () => void;
      const inside = new Promise<void>((resolve) => (entered = resolve));
      const write = leases.fencedWrite(lease, async () => {
        entered();
        await held;
      });
      await inside;
      const revoked = await leases.revoke('k', { reason: 'operator' }).then(
        () => null,
        (thrown: unknown) => thrown,
      );
      release();
      await write;
      expect(isStoreFailure(revoked)).toBe(true);
      expect((revoked as Error).message).toMatch(/contention/);
      expect((await leases.inspect('k')).grant?.token).toBe(lease.token);
    } finally {
      await contended.end();
    }
  });
});
