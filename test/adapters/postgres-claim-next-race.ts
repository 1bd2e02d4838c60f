/**
 * Claim-next on real PostgreSQL under concurrency (issue 24's race test): 8 clients, each its own store on its
 * own pool, claim-next over 100 items at once; most grants do a fenced write (a ledger row) and release, some
 * are abandoned and expire (taken over later). Checked from the server's times in the outcomes:
 * - at most one live holder per item at a time: per key, each grant starts no earlier than the previous one ended
 *   (its release, or its expiry), and tokens rise in grant order; the fenced writes of a key are in token order;
 * - none starved: the first 100 grants are 100 distinct items (a released item goes behind every waiting one),
 *   give or take the CLIENTS - 1 rows that SKIP LOCKED lets a claimer pass while other claimers grant them;
 * - none lost: once every grant ended, a sweep claims each of the 100 items once, then the set is idle.
 */
import { expect } from 'vitest';
import type { PostgresStore } from '../../src/adapters/postgres/index.js';
import type { StoreHarness } from '../../src/testing/index.js';
import {
  expectEveryItemClaimable,
  expectNoneStarved,
  expectOneHolderAtATime,
  raceCommand,
  raceKeys,
  type GrantSeen,
} from '../claim-next/race-checks.js';
import type { Query } from './postgres-claim-next-model.js';

const ITEMS = 100;
const CLIENTS = 8;
const GRANTS = 400;
const HELD_MS = 5_000;
const ABANDONED_MS = 40;

interface Grant extends GrantSeen {
  /** Its holder wrote a ledger row under it. */
  written: boolean;
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** Runs the race on `harness` (a ledger table `<table>_ledger`), reading the ledger with `query`. */
export async function runClaimNextRace(harness: StoreHarness<PostgresStore>, query: Query): Promise<void> {
  const set = harness.freshKey('race').replace(/[{}]/g, '_');
  const keys = raceKeys(set, ITEMS);
  const added = await harness.store.addItems({ set, keys });
  expect(added).toMatchObject({ ok: true, added: keys });
  const stores = await Promise.all(Array.from({ length: CLIENTS }, () => harness.connect()));
  const ledger = `"${harness.store.table}_ledger"`;
  const grants: Grant[] = [];
  let started = 0;
  const worker = async (store: PostgresStore, index: number): Promise<void> => {
    let round = 0;
    while (started < GRANTS) {
      round += 1;
      // NOTE: every 10th grant of a worker is abandoned: it expires, and a later claim-next takes it over.
      const abandon = round % 10 === 3;
      const command = raceCommand(set, `w${index}`, abandon ? ABANDONED_MS : HELD_MS);
      const outcome = await store.claimNext(command);
      if (!outcome.ok) {
        await sleep(outcome.nextAt === null ? 5 : Math.min(20, Math.max(1, outcome.nextAt - outcome.now)));
        continue;
      }
      started += 1;
      const seen: Grant = {
        key: outcome.key,
        token: outcome.token,
        acquiredAt: outcome.acquiredAt,
        end: outcome.expiresAt ?? Infinity,
        written: false,
      };
      grants.push(seen);
      if (abandon) continue;
      const fence = { key: outcome.key, token: outcome.token, secret: command.secret, holder: command.holder, runId: command.runId };
      const written = await store.fencedWrite(fence, (tx) =>
        tx.query(`INSERT INTO ${ledger} (key, entry, token) VALUES ($1, $2, $3)`, [fence.key, command.holder, fence.token.toString()]),
      );
      expect(written.ok, `fenced write of ${fence.key} under ${fence.token}`).toBe(true);
      seen.written = true;
      const released = await store.release({ fence });
      expect(released.ok, `release of ${fence.key}`).toBe(true);
      seen.end = (released as { now: number }).now;
    }
  };
  await Promise.all(stores.map((store, index) => worker(store, index)));

  // NOTE: tokens are clock-floored, so they rise with time: token order is grant order.
  // NOTE: SKIP LOCKED: a claimer may pass the rows the other CLIENTS - 1 are granting at that moment.
  expectNoneStarved(grants, ITEMS, CLIENTS - 1);
  expectOneHolderAtATime(grants);
  // NOTE: the fenced writes of each key are in token order (commit order = ledger seq order).
  const rows = (await query(`SELECT key, token::text AS token FROM ${ledger} WHERE key LIKE $1 ORDER BY seq`, [`{${set}}:%`])) as Array<{
    key: string;
    token: string;
  }>;
  const last = new Map<string, bigint>();
  for (const row of rows) {
    const token = BigInt(row.token);
    expect(token > (last.get(row.key) ?? 0n), `ledger of ${row.key}: ${token} after ${last.get(row.key)}`).toBe(true);
    last.set(row.key, token);
  }
  expect(rows.length).toBe(grants.filter((grant) => grant.written).length);

  // NOTE: none lost: after the abandoned grants expired, every item is claimable once, then idle.
  await sleep(ABANDONED_MS * 2);
  await expectEveryItemClaimable(harness.store, set, ITEMS, HELD_MS);
}
