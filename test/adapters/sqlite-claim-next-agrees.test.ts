/**
 * Claim-next on SQLite answers exactly what the pure core answers: random sequences of claim-next (take-over and
 * record-first, with and without `expect`, a repeated secret), claims (recovering or not; waiting, with the waiter
 * ids of a queue, or jumping it) and dequeues (so keys' queues grow, expire and empty while claim-next and the other
 * operations rewrite their records: `inspect` after every step shows each key's live waiters), renew, release
 * (with a hold, with a checkpoint decision), checkpoint, recover, fenced writes with a checkpoint, revoke (with or
 * without recovery), state changes (with a hold), remove, items added (with a delay) and removed, and time passing,
 * run on the memory store (the reference: the pure transitions over a map) and on a SQLite file with the same
 * manual clock and secrets; every outcome must be equal (tokens aside: see `withoutTokens`). After every step,
 * each item row's `available_at` (the index claim-next reads) must equal the pure `availableSince` of the row's
 * record and item: a statement that forgets to keep it shows here first.
 *
 * Keys include characters where UTF-8 byte order and UTF-16 code-unit order disagree (U+E000 and U+10000), so
 * ties in availability are broken in the pure core's order, not the key column's.
 */
import fc from 'fast-check';
import Database from 'better-sqlite3';
import { afterEach, describe, expect, it } from 'vitest';
import { createManualClock, createMemoryStore } from '../../src/adapters/memory/index.js';
import { createSqliteStore } from '../../src/adapters/sqlite/index.js';
import { RECORD_COLUMNS_SQL, recordOf } from '../../src/adapters/sqlite/rows.js';
import { availableSince, type ClaimNextCommand, type OnExpired } from '../../src/fence/claim-next.js';
import type { Fence } from '../../src/fence/types.js';
import type { Store } from '../../src/store.js';
import { newSecret } from '../../src/secret.js';
import { scaled } from '../support/scale.js';
import { freshDatabasePath, SQLITE_EPOCH } from './sqlite-harness.js';

const SET = 'agree';
const OTHER_SET = 'agree-other';
const KEYS = ['{agree}:a', '{agree}:b', '{agree}:\uE000', '{agree}:\u{10000}', '{agree}:c'];
const HOLDERS = ['w1', 'w2'];

type Op =
  | { kind: 'claimNext'; holder: number; ttlMs: number | null; onExpired: OnExpired; expect: string | null; again: boolean }
  | {
      kind: 'claim';
      pick: number;
      holder: number;
      ttlMs: number;
      recovering: boolean;
      wait: string[] | null;
      waitTtlMs: number;
      jumpQueue: boolean;
    }
  | { kind: 'dequeue'; pick: number; waiterIds: string[] }
  | { kind: 'renew'; grant: number; ttlMs: number }
  | { kind: 'release'; grant: number; holdMs: number | null; checkpoint: boolean }
  | { kind: 'checkpoint'; grant: number }
  | { kind: 'recover'; grant: number; resume: boolean }
  | { kind: 'write'; grant: number }
  | { kind: 'revoke'; pick: number; requireRecovery: boolean }
  | { kind: 'state'; pick: number; value: string | null; holdMs: number | null }
  | { kind: 'remove'; pick: number }
  | { kind: 'addItems'; picks: number[]; delayMs: number; other: boolean }
  | { kind: 'removeItems'; picks: number[] }
  | { kind: 'advance'; ms: number };

const pick = fc.nat({ max: KEYS.length - 1 });
const grant = fc.nat({ max: 7 });
const picks = fc.uniqueArray(pick, { minLength: 1, maxLength: 3 });
/** Waiter ids of a waiting claim (the claimant first) or a dequeue: few, so that queues meet their own waiters again. */
const waiterIds = fc.uniqueArray(fc.constantFrom('q1', 'q2', 'q3', 'q4'), { minLength: 1, maxLength: 3 });
const opArb: fc.Arbitrary<Op> = fc.oneof(
  {
    weight: 6,
    arbitrary: fc.record({
      kind: fc.constant('claimNext' as const),
      holder: fc.nat({ max: 1 }),
      ttlMs: fc.oneof({ weight: 9, arbitrary: fc.integer({ min: 1, max: 300 }) }, { weight: 1, arbitrary: fc.constant(null) }),
      onExpired: fc.constantFrom<OnExpired>('take-over', 'record-first'),
      expect: fc.constantFrom(null, null, 'x', 'y'),
      again: fc.boolean(),
    }),
  },
  {
    weight: 4,
    arbitrary: fc.record({
      kind: fc.constant('claim' as const),
      pick,
      holder: fc.nat({ max: 1 }),
      ttlMs: fc.integer({ min: 1, max: 300 }),
      recovering: fc.boolean(),
      wait: fc.option(waiterIds, { nil: null, freq: 3 }),
      waitTtlMs: fc.integer({ min: 1, max: 400 }),
      jumpQueue: fc.constantFrom(false, false, false, true),
    }),
  },
  fc.record({ kind: fc.constant('dequeue' as const), pick, waiterIds }),
  fc.record({ kind: fc.constant('renew' as const), grant, ttlMs: fc.integer({ min: 1, max: 300 }) }),
  {
    weight: 3,
    arbitrary: fc.record({
      kind: fc.constant('release' as const),
      grant,
      holdMs: fc.option(fc.integer({ min: 0, max: 300 }), { nil: null }),
      checkpoint: fc.boolean(),
    }),
  },
  fc.record({ kind: fc.constant('checkpoint' as const), grant }),
  fc.record({ kind: fc.constant('recover' as const), grant, resume: fc.boolean() }),
  fc.record({ kind: fc.constant('write' as const), grant }),
  fc.record({ kind: fc.constant('revoke' as const), pick, requireRecovery: fc.boolean() }),
  {
    weight: 2,
    arbitrary: fc.record({
      kind: fc.constant('state' as const),
      pick,
      value: fc.constantFrom(null, 'x', 'y'),
      holdMs: fc.option(fc.integer({ min: 0, max: 300 }), { nil: null }),
    }),
  },
  fc.record({ kind: fc.constant('remove' as const), pick }),
  fc.record({ kind: fc.constant('addItems' as const), picks, delayMs: fc.constantFrom(0, 0, 50, 400), other: fc.boolean() }),
  fc.record({ kind: fc.constant('removeItems' as const), picks }),
  { weight: 4, arbitrary: fc.record({ kind: fc.constant('advance' as const), ms: fc.integer({ min: 0, max: 400 }) }) },
);

/**
 * The outcome without its tokens. NOTE: both stores mint `previous + 1` with no clock floor, but above a removed
 * record's token they differ by design: memory mints every claim above the highest removed token, SQLite only
 * the claim of a key with no token of its own (both keep each key's tokens increasing and never reissue one).
 */
function withoutTokens(value: unknown): unknown {
  return JSON.parse(
    JSON.stringify(value, (name, inner: unknown) => (name === 'token' ? undefined : typeof inner === 'bigint' ? String(inner) : inner)),
  );
}

let cleanup: (() => void) | null = null;
afterEach(() => {
  cleanup?.();
  cleanup = null;
});

describe('claim-next on SQLite agrees with the reference (memory: the pure core)', () => {
  it('answers every operation as the reference does, and keeps available_at equal to availableSince', async () => {
    await fc.assert(
      // NOTE: `safe`: a connection that returns every INTEGER as a bigint (better-sqlite3's safe integers).
      fc.asyncProperty(fc.array(opArb, { minLength: 1, maxLength: 60 }), fc.boolean(), async (ops, safe) => {
        cleanup?.();
        const file = freshDatabasePath('leasefence-claim-next-agrees');
        const database = new Database(file.path).defaultSafeIntegers(safe);
        cleanup = () => {
          database.close();
          file.remove();
        };
        const clock = createManualClock(SQLITE_EPOCH);
        const reference = createMemoryStore({ clock });
        const sqlite = createSqliteStore({ client: database, clock, tokenFloor: () => 0n });
        await sqlite.migrate();
        const stores: readonly Store[] = [reference, sqlite];
        /** Fences of grants made so far, per store (the same grants: their tokens may differ). */
        const fences: Fence[][] = [[], []];
        const both = async <O>(step: (store: Store, index: number) => Promise<O>): Promise<O[]> => {
          const outcomes: O[] = [];
          for (const [index, store] of stores.entries()) outcomes.push(await step(store, index));
          expect(withoutTokens(outcomes[1]), 'sqlite answers as the reference').toEqual(withoutTokens(outcomes[0]));
          return outcomes;
        };
        const remember = (outcomes: readonly unknown[], secret: string, holder: string) => {
          for (const [index, outcome] of outcomes.entries()) {
            const granted = outcome as { ok: boolean; key?: string; token?: bigint };
            if (granted.ok && granted.key !== undefined && granted.token !== undefined)
              (fences[index] as Fence[]).push({ key: granted.key, token: granted.token, secret, holder, runId: `run-${holder}` });
          }
        };
        const fenceAt = (index: number, which: number): Fence | undefined => {
          const list = fences[index] as Fence[];
          return list.length === 0 ? undefined : list[list.length - 1 - (which % list.length)];
        };
        await both((store) => (store.addItems as NonNullable<Store['addItems']>)({ set: SET, keys: KEYS }));
        let lastSecret = newSecret();
        for (const op of ops) {
          switch (op.kind) {
            case 'advance':
              clock.advance(op.ms);
              break;
            case 'claimNext': {
              const holder = HOLDERS[op.holder] as string;
              const secret = op.again ? lastSecret : newSecret();
              lastSecret = secret;
              const command: ClaimNextCommand = {
                set: SET,
                holder,
                runId: `run-${holder}`,
                secret,
                ttlMs: op.ttlMs,
                attributes: { via: 'next' },
                onExpired: op.onExpired,
                ...(op.expect === null ? {} : { expect: { stage: op.expect } }),
              };
              remember(await both((store) => (store.claimNext as NonNullable<Store['claimNext']>)(command)), secret, holder);
              break;
            }
            case 'claim': {
              const holder = HOLDERS[op.holder] as string;
              const secret = newSecret();
              const command = {
                key: KEYS[op.pick] as string,
                holder,
                runId: `run-${holder}`,
                secret,
                ttlMs: op.ttlMs,
                attributes: {},
                recovering: op.recovering,
                ...(op.wait === null ? {} : { queue: { waiterIds: op.wait, ttlMs: op.waitTtlMs } }),
                ...(op.jumpQueue ? { jumpQueue: true } : {}),
              };
              remember(await both((store) => store.claim(command)), secret, holder);
              break;
            }
            case 'dequeue':
              await both((store) => store.dequeue({ key: KEYS[op.pick] as string, waiterIds: op.waiterIds }));
              break;
            case 'renew':
              if (fenceAt(0, op.grant) === undefined) break;
              await both((store, index) => store.renew({ fence: fenceAt(index, op.grant) as Fence, ttlMs: op.ttlMs }));
              break;
            case 'release':
              if (fenceAt(0, op.grant) === undefined) break;
              await both((store, index) =>
                store.release({
                  fence: fenceAt(index, op.grant) as Fence,
                  ...(op.holdMs === null ? {} : { holdMs: op.holdMs }),
                  ...(op.checkpoint ? { checkpointJson: '{"done":true}' } : {}),
                }),
              );
              break;
            case 'checkpoint':
              if (fenceAt(0, op.grant) === undefined) break;
              await both((store, index) => store.checkpoint({ fence: fenceAt(index, op.grant) as Fence, json: '{"step":1}' }));
              break;
            case 'recover':
              if (fenceAt(0, op.grant) === undefined) break;
              await both((store, index) =>
                store.recover({ fence: fenceAt(index, op.grant) as Fence, action: op.resume ? 'resume' : 'discard' }),
              );
              break;
            case 'write':
              if (fenceAt(0, op.grant) === undefined) break;
              await both(async (store, index) => {
                const outcome = await store.fencedWrite(fenceAt(index, op.grant) as Fence, () => 'written', {
                  checkpointJson: '{"wrote":true}',
                });
                return outcome;
              });
              break;
            case 'revoke':
              await both((store) =>
                store.revoke({
                  key: KEYS[op.pick] as string,
                  reason: 'ops',
                  by: 'ops',
                  requireRecovery: op.requireRecovery,
                  expectedToken: null,
                }),
              );
              break;
            case 'state':
              await both((store) =>
                store.setKeyState({
                  key: KEYS[op.pick] as string,
                  values: { stage: op.value },
                  by: 'scanner',
                  ...(op.holdMs === null ? {} : { holdMs: op.holdMs }),
                }),
              );
              break;
            case 'remove':
              await both((store) => store.remove({ key: KEYS[op.pick] as string, force: true, expectedToken: null }));
              break;
            case 'addItems':
              await both((store) =>
                (store.addItems as NonNullable<Store['addItems']>)({
                  set: op.other ? OTHER_SET : SET,
                  keys: op.picks.map((index) => KEYS[index] as string),
                  notBeforeMs: op.delayMs,
                }),
              );
              break;
            case 'removeItems':
              await both((store) =>
                (store.removeItems as NonNullable<Store['removeItems']>)({
                  set: SET,
                  keys: op.picks.map((index) => KEYS[index] as string),
                }),
              );
              break;
          }
          for (const key of KEYS) await both((store) => store.inspect(key));
          const rows = database
            .prepare(`SELECT ${RECORD_COLUMNS_SQL}, item_set, item_due_at, available_at FROM leasefence_leases WHERE item_set IS NOT NULL`)
            .all() as { key: string; item_set: string; item_due_at: number | bigint; available_at: number | bigint | null }[];
          for (const row of rows) {
            const since = availableSince(recordOf(row), { set: row.item_set, key: row.key, dueAt: Number(row.item_due_at) });
            const stored = row.available_at === null ? null : Number(row.available_at);
            expect(stored, `available_at of ${row.key} after ${op.kind}`).toBe(since);
          }
        }
      }),
      { numRuns: scaled(150) },
    );
  });
});
