/**
 * Claim-next on PostgreSQL (issue 24, capability 1; the conformance specs run with every store's, conformance.ts,
 * on every client): a model test (pg Pool, postgres.js, pg through PgBouncer) that also checks `available_at` after every step; and the race
 * of 8 clients over 100 items.
 */
import pg from 'pg';
import { afterAll, describe, expect, it } from 'vitest';
import { scaled } from '../support/scale.js';
import { runClaimNextModel } from './postgres-claim-next-model.js';
import { runClaimNextRace } from './postgres-claim-next-race.js';
import { makePostgresHarness, sharedPostgresUrl } from './postgres-harness.js';
import { makeBouncedHarness, stopBouncer } from './postgres-pgbouncer-harness.js';

afterAll(stopBouncer);

describe('postgres claim-next against a model kept from outcomes, with available_at checked after every step', () => {
  const cases = [
    ['pg Pool', makePostgresHarness('pg-pool'), 40],
    ['postgres.js', makePostgresHarness('postgresjs'), 15],
    ['pg Pool through PgBouncer, prepare: false', makeBouncedHarness('pg-pool'), 15],
  ] as const;
  for (const [name, makeHarness, runs] of cases) {
    it(`${name}: grants what the model says is available longest, idle exactly when none is; available_at = availableSince`, async () => {
      const harness = await makeHarness();
      // NOTE: the port check reads the table directly (one connection to the server, not through the pooler).
      const pool = new pg.Pool({ connectionString: await sharedPostgresUrl(), max: 1 });
      try {
        await runClaimNextModel(harness, async (text, params) => (await pool.query(text, params)).rows, scaled(runs));
      } finally {
        await pool.end();
        await harness.close();
      }
    }, 120_000);
  }
});

describe('postgres claim-next race: 8 clients over 100 items', () => {
  it('pg Pool: one live holder per item at a time, fenced writes in token order, none starved, none lost', async () => {
    const harness = await makePostgresHarness('pg-pool')();
    const pool = new pg.Pool({ connectionString: await sharedPostgresUrl(), max: 1 });
    try {
      await runClaimNextRace(harness, async (text, params) => (await pool.query(text, params)).rows);
    } finally {
      await pool.end();
      await harness.close();
    }
  }, 120_000);
});

describe('postgres addItems race: one new key added to two sets at once', () => {
  it('pg Pool: one call adds it, the other answers in-another-set (never both ok)', async () => {
    const harness = await makePostgresHarness('pg-pool')();
    try {
      const [first, second] = [harness.store, await harness.connect()];
      for (let round = 0; round < 40; round += 1) {
        const key = harness.freshKey('contested');
        const outcomes = await Promise.all([first.addItems({ set: 'left', keys: [key] }), second.addItems({ set: 'right', keys: [key] })]);
        const added = outcomes.filter((outcome) => outcome.ok && outcome.added.includes(key));
        const refused = outcomes.filter((outcome) => !outcome.ok && outcome.reason === 'in-another-set' && outcome.key === key);
        expect({ round, added: added.length, refused: refused.length }).toEqual({ round, added: 1, refused: 1 });
      }
    } finally {
      await harness.close();
    }
  }, 60_000);
});
