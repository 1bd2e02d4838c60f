/**
 * Semaphores on PostgreSQL (issue 25): the scenarios of postgres-permits-scenarios.ts on every client the store
 * supports (pg Pool, a single pg Client, postgres.js, PGlite, pg through PgBouncer in transaction mode); and the race
 * of 8 clients over one semaphore (postgres-permits-race.ts) on pg, postgres.js and pg through PgBouncer; and random sequences that
 * must answer what the memory store answers (postgres-permits-agree.ts).
 */
import pg from 'pg';
import { afterAll, describe, expect, it } from 'vitest';
import { createPostgresStore } from '../../src/adapters/postgres/index.js';
import { isLeaseError } from '../../src/errors.js';
import { permitCommand } from '../permits/race-checks.js';
import { scaled } from '../support/scale.js';
import { makePostgresHarness, sharedPostgresUrl } from './postgres-harness.js';
import { runPermitAgreement } from './postgres-permits-agree.js';
import { runPermitRace } from './postgres-permits-race.js';
import { runPermitScenarios } from './postgres-permits-scenarios.js';
import { makeBouncedHarness, stopBouncer } from './postgres-pgbouncer-harness.js';

afterAll(stopBouncer);

describe('postgres acquirePermit: every rule of fence/permits.ts, SQL checked against the pure core at every call', () => {
  const cases = [
    ['pg Pool', makePostgresHarness('pg-pool')],
    ['pg Client', makePostgresHarness('pg-client')],
    ['postgres.js', makePostgresHarness('postgresjs')],
    ['PGlite', makePostgresHarness('pglite')],
    ['pg Pool through PgBouncer, prepare: false', makeBouncedHarness('pg-pool')],
  ] as const;
  for (const [name, makeHarness] of cases) {
    it(`${name}: limit, order, re-delivery, takeover, hold, recovery, shapes, busy, not items`, async () => {
      const harness = await makeHarness();
      try {
        await runPermitScenarios(harness);
      } finally {
        await harness.close();
      }
    }, 60_000);
  }
});

describe('postgres acquirePermit race: 8 clients, limit 3, fenced writes, releases and abandoned grants', () => {
  const cases = [
    ['pg Pool', makePostgresHarness('pg-pool')],
    ['postgres.js', makePostgresHarness('postgresjs')],
    ['pg Pool through PgBouncer, prepare: false', makeBouncedHarness('pg-pool')],
  ] as const;
  for (const [name, makeHarness] of cases) {
    it(`${name}: never more than 3 live, tokens rising across the permits, fenced writes in token order`, async () => {
      const harness = await makeHarness();
      const pool = new pg.Pool({ connectionString: await sharedPostgresUrl(), max: 1 });
      try {
        await runPermitRace(harness, async (text, params) => (await pool.query(text, params)).rows);
      } finally {
        await pool.end();
        await harness.close();
      }
    }, 120_000);
  }
});

describe('postgres acquirePermit agrees with the memory store, field by field, at the same now', () => {
  const cases = [
    ['pg Pool', makePostgresHarness('pg-pool'), 20],
    ['postgres.js', makePostgresHarness('postgresjs'), 5],
    ['PGlite', makePostgresHarness('pglite'), 3],
  ] as const;
  for (const [name, makeHarness, runs] of cases) {
    it(`${name}: random acquires and permit operations answer as fence/permits.ts does`, async () => {
      const harness = await makeHarness();
      try {
        await runPermitAgreement(harness, scaled(runs), 40);
      } finally {
        await harness.close();
      }
    }, 120_000);
  }
});

describe('postgres acquirePermit refuses an isolation level it cannot count permits under', () => {
  it('a pool whose transactions are REPEATABLE READ gets an error, never a grant decided on a snapshot older than the lock', async () => {
    const url = await sharedPostgresUrl();
    const harness = await makePostgresHarness('pg-pool')();
    const pool = new pg.Pool({ connectionString: url, max: 1, options: '-c default_transaction_isolation=repeatable\\ read' });
    try {
      const store = createPostgresStore({ client: pool, table: harness.store.table });
      await expect(store.acquirePermit(permitCommand('iso', 'a', 2, 1_000))).rejects.toThrow(/READ COMMITTED/);
      expect((await harness.store.acquirePermit(permitCommand('iso', 'a', 2, 1_000))).ok).toBe(true);
    } finally {
      await pool.end();
      await harness.close();
    }
  });
});

describe('postgres acquirePermit on a table migrated before semaphores', () => {
  it('without the acquire function, STORE_UNAVAILABLE names store.migrate(); after it, the acquire is granted', async () => {
    const harness = await makePostgresHarness('pg-pool')();
    const pool = new pg.Pool({ connectionString: await sharedPostgresUrl(), max: 1 });
    try {
      await pool.query(`DROP FUNCTION "${harness.store.table}_acquire_permit"`);
      const error = await harness.store.acquirePermit(permitCommand('old', 'a', 1, 1_000)).catch((caught: unknown) => caught);
      expect(isLeaseError(error, 'STORE_UNAVAILABLE')).toBe(true);
      expect((error as Error).message).toContain('await store.migrate()');
      await harness.store.migrate();
      expect((await harness.store.acquirePermit(permitCommand('old', 'a', 1, 1_000))).ok).toBe(true);
    } finally {
      await pool.end();
      await harness.close();
    }
  });
});
