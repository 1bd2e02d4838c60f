/**
 * Claim-next on real PostgreSQL against the model kept from outcomes (test/claim-next/outcome-model.ts): the
 * server's clock cannot be moved, so time passes for real and the model reads each outcome's `now`. PostgreSQL's
 * own check after every step, the port check: each item row's `available_at` equals the pure `availableSince` of
 * the record decoded from the row (a statement that forgets to keep it shows there first), and a key that is no
 * item has none.
 */
import { expect } from 'vitest';
import type { PostgresStore } from '../../src/adapters/postgres/index.js';
import { decodePreImage, epochMs, preImageJson } from '../../src/adapters/postgres/rows.js';
import { availableSince } from '../../src/fence/claim-next.js';
import type { StoreHarness } from '../../src/testing/index.js';
import { runClaimNextModel as runModel } from '../claim-next/outcome-model.js';

const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));

/** The port check: `available_at` of every row of `keys` equals the pure `availableSince` of its record and item. */
async function expectIndexKept(store: PostgresStore, query: Query, set: string, keys: readonly string[]): Promise<void> {
  const table = `"${store.table}"`;
  const sql = `SELECT l.key, l.item_set, ${epochMs('l.item_due_at')}::text AS due, ${epochMs('l.available_at')}::text AS available,
    ${preImageJson('record', 'l.', 'pg_catalog.clock_timestamp()', 'false', null)} AS r
    FROM ${table} AS l WHERE l.key = ANY ($1::text[])`;
  const rows = (await query(sql, [keys])) as Array<{
    key: string;
    item_set: string | null;
    due: string | null;
    available: string | null;
    r: string;
  }>;
  for (const row of rows) {
    if (row.item_set === null) {
      expect(row.available, `${row.key} is no item: no availability`).toBeNull();
      continue;
    }
    expect(row.item_set).toBe(set);
    const { record } = decodePreImage(row.r);
    const expected = availableSince(record, { set, key: row.key, dueAt: Number(row.due) });
    expect(row.available === null ? null : Number(row.available), `available_at of ${row.key}`).toBe(expected);
  }
}

/** Sends SQL to the store's database and answers its rows. */
export type Query = (text: string, params: unknown[]) => Promise<unknown[]>;

/** Runs the model property on `harness` (its store's table read with `query`), `runs` random sequences. */
export async function runClaimNextModel(harness: StoreHarness<PostgresStore>, query: Query, runs: number): Promise<void> {
  const { store } = harness;
  await runModel({
    keyCount: 3,
    // NOTE: short claim-next grants, so that expired grants are taken over (record-first's abandoned runs) often.
    timing: { claimNextTtlMs: 20, ttlMs: 60, holdMs: 40, delaysMs: [0, 0, 10, 40], advanceMs: 40 },
    maxLength: 50,
    size: 'max',
    runs,
    target: async (keyCount) => {
      const set = harness.freshKey('model').replace(/[{}]/g, '_');
      const keys = Array.from({ length: keyCount }, (_, index) => `{${set}}:${String.fromCharCode(97 + index)}`);
      return { store, set, keys, advance: sleep, check: () => expectIndexKept(store, query, set, keys) };
    },
  });
}
