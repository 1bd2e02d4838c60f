/**
 * Semaphores on PostgreSQL (issue 25): the scenarios of postgres-permits-scenarios.ts on every client the store
 * supports (pg Pool, a single pg Client, postgres.js, PGlite, pg through PgBouncer in transaction mode).
 */
import { afterAll, describe, it } from 'vitest';
import { makePostgresHarness } from './postgres-harness.js';
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
