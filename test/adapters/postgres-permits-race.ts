/**
 * Semaphores on real PostgreSQL under concurrency (issue 25's race test): 8 clients, each its own store on its own
 * pool, acquire permits of one semaphore with limit 3 at once; most grants do a fenced write (a ledger row) and
 * release, some are abandoned (a short TTL) and expire, to be taken over. Checked from the store's times in the
 * outcomes (test/permits/race-checks.ts): never more than 3 live grants at any instant, and tokens distinct and
 * rising in grant order across the semaphore's permits, one live grant per permit at a time; every fenced write
 * under a grant succeeded, and each permit's writes are in token order.
 */
import { expect } from 'vitest';
import type { PostgresStore } from '../../src/adapters/postgres/index.js';
import type { StoreHarness } from '../../src/testing/index.js';
import type { Query } from './postgres-claim-next-model.js';
import { expectAtMostLive, expectTokensRise, permitCommand, type PermitGrantSeen } from '../permits/race-checks.js';

const CLIENTS = 8;
const LIMIT = 3;
const HELD_MS = 5_000;
const ABANDONED_MS = 40;

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** Runs the race on `harness` (its ledger table `<table>_ledger`) until `grants` acquires were granted. */
export async function runPermitRace(harness: StoreHarness<PostgresStore>, query: Query, grants = 300): Promise<void> {
  const semaphore = harness.freshKey('race').replace(/[{}]/g, '_');
  const stores = await Promise.all(Array.from({ length: CLIENTS }, () => harness.connect()));
  const ledger = `"${harness.store.table}_ledger"`;
  const seen: PermitGrantSeen[] = [];
  let started = 0;
  let refusals = 0;
  let written = 0;
  const worker = async (store: PostgresStore, index: number): Promise<void> => {
    let round = 0;
    while (started < grants) {
      round += 1;
      // NOTE: every 10th grant of a worker is abandoned: it expires, and a later acquire takes its permit over.
      const abandon = round % 10 === 3;
      const command = permitCommand(semaphore, `w${index}`, LIMIT, abandon ? ABANDONED_MS : HELD_MS);
      const outcome = await store.acquirePermit(command);
      if (!outcome.ok) {
        refusals += 1;
        expect(outcome.live.length + outcome.unavailable.length).toBeGreaterThanOrEqual(1);
        await sleep(outcome.nextAt === null ? 5 : Math.min(20, Math.max(1, outcome.nextAt - outcome.now)));
        continue;
      }
      started += 1;
      expect(outcome.live).toBeLessThanOrEqual(LIMIT);
      const grant: PermitGrantSeen = {
        key: outcome.key,
        token: outcome.token,
        acquiredAt: outcome.acquiredAt,
        end: outcome.expiresAt ?? Infinity,
      };
      seen.push(grant);
      if (abandon) continue;
      const fence = { key: outcome.key, token: outcome.token, secret: command.secret, holder: command.holder, runId: command.runId };
      const wrote = await store.fencedWrite(fence, (tx) =>
        tx.query(`INSERT INTO ${ledger} (key, entry, token) VALUES ($1, $2, $3)`, [fence.key, command.holder, fence.token.toString()]),
      );
      expect(wrote.ok, `fenced write of ${fence.key} under ${fence.token}`).toBe(true);
      written += 1;
      const released = await store.release({ fence });
      expect(released.ok, `release of ${fence.key}`).toBe(true);
      grant.end = (released as { now: number }).now;
    }
  };
  await Promise.all(stores.map((store, index) => worker(store, index)));

  expect(seen.length).toBeGreaterThanOrEqual(grants);
  // NOTE: with 8 clients and 3 permits, most acquires are refused `full`: the race is real.
  expect(refusals).toBeGreaterThan(0);
  expectAtMostLive(seen, LIMIT);
  expectTokensRise(seen);
  expect(new Set(seen.map((grant) => grant.key)).size).toBeLessThanOrEqual(LIMIT);
  // NOTE: the fenced writes of each permit are in token order (commit order = ledger seq order): a write commits
  // before its grant's release, and the permit's next grant comes after that release.
  const ledgerRows = (await query(`SELECT key, token::text AS token FROM ${ledger} WHERE key LIKE $1 ORDER BY seq`, [
    `{${semaphore}}:%`,
  ])) as Array<{ key: string; token: string }>;
  expect(ledgerRows.length).toBe(written);
  const last = new Map<string, bigint>();
  const disorder: string[] = [];
  for (const row of ledgerRows) {
    const token = BigInt(row.token);
    if (token <= (last.get(row.key) ?? 0n)) disorder.push(`${row.key}: ${token} after ${last.get(row.key)}`);
    last.set(row.key, token);
  }
  expect(disorder).toEqual([]);
}
