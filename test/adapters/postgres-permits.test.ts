/**
 * Semaphores on PostgreSQL (issue 25): the scenarios of postgres-permits-scenarios.ts on every client the store
 * supports (pg Pool, a single pg Client, postgres.js, PGlite, pg through PgBouncer in transaction mode); and the race
 * of 8 clients over one semaphore (postgres-permits-race.ts) on pg and postgres.js; and random sequences that
 * must answer what the memory store answers (postgres-permits-agree.ts).
 */
import pg from 'pg';
import { afterAll, describe, it } from 'vitest';
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
