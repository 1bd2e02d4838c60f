/**
 * Claim-next on real PostgreSQL against a model kept from outcomes alone (test/claim-next/memory-model.test.ts,
 * adapted: the server's clock cannot be moved, so time passes for real and the model reads each outcome's `now`).
 * At every claim-next the model says which items are claimable and since when; the store must grant the one
 * available longest (ties by key), or answer idle exactly when none is, with the earliest time one becomes
 * claimable. After every step, the port check: each item row's `available_at` equals the pure `availableSince`
 * of the record decoded from the row (a statement that forgets to keep it shows there first), and a key that is no
 * item has none.
 */
import fc from 'fast-check';
import { expect } from 'vitest';
import type { PostgresStore } from '../../src/adapters/postgres/index.js';
import { decodePreImage, epochMs, preImageJson } from '../../src/adapters/postgres/rows.js';
import { availableSince, type ClaimNextCommand } from '../../src/fence/claim-next.js';
import type { Fence } from '../../src/fence/types.js';
import { newSecret } from '../../src/secret.js';
import type { StoreHarness } from '../../src/testing/index.js';

/** What the model knows of one key, from outcomes: its live-or-expired grant, its last ending, hold and item. */
interface KeyModel {
  grant: { expiresAt: number; fence: Fence } | null;
  endedAt: number | null;
  heldUntil: number | null;
  /** Its due time while it is an item of the set; `null`: not an item. */
  dueAt: number | null;
  /** The key requires recovery (a record-first claim-next took an abandoned run over): blocked. */
  recovery: boolean;
  /** The last grant ended by expiring (taken over, or recorded `expired` by a state change): an abandoned run. */
  endedExpired: boolean;
}

type Op =
  | { kind: 'claimNext'; ttlMs: number; recordFirst: boolean }
  | { kind: 'checkpoint' }
  | { kind: 'release'; pick: number; holdMs: number | null }
  | { kind: 'renew'; pick: number; ttlMs: number }
  | { kind: 'revoke'; pick: number }
  | { kind: 'state'; pick: number }
  | { kind: 'remove'; pick: number }
  | { kind: 'removeItem'; pick: number }
  | { kind: 'addItem'; pick: number; delayMs: number }
  | { kind: 'claim'; pick: number; ttlMs: number }
  | { kind: 'advance'; ms: number };

const KEY_COUNT = 3;
const pickArb = fc.nat({ max: KEY_COUNT - 1 });
const ttlArb = fc.integer({ min: 1, max: 60 });
const opArb: fc.Arbitrary<Op> = fc.oneof(
  {
    weight: 6,
    // NOTE: short grants, so that expired grants are taken over (record-first's abandoned runs) often.
    arbitrary: fc.record({ kind: fc.constant('claimNext' as const), ttlMs: fc.integer({ min: 1, max: 20 }), recordFirst: fc.boolean() }),
  },
  { weight: 2, arbitrary: fc.record({ kind: fc.constant('checkpoint' as const) }) },
  {
    weight: 3,
    arbitrary: fc.record({
      kind: fc.constant('release' as const),
      pick: pickArb,
      holdMs: fc.option(fc.integer({ min: 0, max: 40 }), { nil: null }),
    }),
  },
  fc.record({ kind: fc.constant('renew' as const), pick: pickArb, ttlMs: ttlArb }),
  { weight: 2, arbitrary: fc.record({ kind: fc.constant('revoke' as const), pick: pickArb }) },
  { weight: 2, arbitrary: fc.record({ kind: fc.constant('state' as const), pick: pickArb }) },
  fc.record({ kind: fc.constant('remove' as const), pick: pickArb }),
  fc.record({ kind: fc.constant('removeItem' as const), pick: pickArb }),
  fc.record({ kind: fc.constant('addItem' as const), pick: pickArb, delayMs: fc.constantFrom(0, 0, 10, 40) }),
  fc.record({ kind: fc.constant('claim' as const), pick: pickArb, ttlMs: ttlArb }),
  { weight: 3, arbitrary: fc.record({ kind: fc.constant('advance' as const), ms: fc.integer({ min: 0, max: 40 }) }) },
);

/** Since when the model says the key is claimable (null: not an item). */
function availableFrom(model: KeyModel): number | null {
  if (model.dueAt === null || model.recovery) return null;
  const end = model.grant !== null ? model.grant.expiresAt : model.endedAt;
  return Math.max(model.dueAt, end ?? Number.NEGATIVE_INFINITY, model.heldUntil ?? Number.NEGATIVE_INFINITY);
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
const nowOf = (outcome: unknown): number => (outcome as { now: number }).now;

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
  await fc.assert(
    fc.asyncProperty(fc.array(opArb, { minLength: 1, maxLength: 50, size: 'max' }), async (ops) => {
      const set = harness.freshKey('model').replace(/[{}]/g, '_');
      const keys = Array.from({ length: KEY_COUNT }, (_, index) => `{${set}}:${String.fromCharCode(97 + index)}`);
      const added = await store.addItems({ set, keys });
      if (!added.ok) throw new Error('addItems refused');
      const models = new Map<string, KeyModel>(
        keys.map((key) => [key, { grant: null, endedAt: null, heldUntil: null, dueAt: added.dueAt, recovery: false, endedExpired: false }]),
      );
      const modelOf = (index: number): [string, KeyModel] => [keys[index] as string, models.get(keys[index] as string) as KeyModel];
      let lastGranted: string | null = null;
      const endGrant = (model: KeyModel, at: number): void => {
        if (model.grant === null) return;
        model.endedExpired = model.grant.expiresAt <= at;
        model.endedAt = Math.min(at, model.grant.expiresAt);
        model.grant = null;
      };
      for (const op of ops) {
        switch (op.kind) {
          case 'advance':
            await sleep(op.ms);
            break;
          case 'claimNext': {
            const command: ClaimNextCommand = {
              set,
              holder: 'w',
              runId: null,
              secret: newSecret(),
              ttlMs: op.ttlMs,
              attributes: {},
              onExpired: op.recordFirst ? 'record-first' : 'take-over',
            };
            const outcome = await store.claimNext(command);
            const { now } = outcome;
            const claimable = [...models]
              .map(([key, model]) => ({ key, since: availableFrom(model) }))
              .filter((entry): entry is { key: string; since: number } => entry.since !== null);
            const ready = claimable.filter((entry) => entry.since <= now).sort((a, b) => a.since - b.since || (a.key < b.key ? -1 : 1));
            const first = ready[0];
            if (first === undefined) {
              const later = claimable.map((entry) => entry.since);
              expect(outcome).toEqual({ ok: false, reason: 'idle', set, nextAt: later.length === 0 ? null : Math.min(...later), now });
              break;
            }
            expect(outcome).toMatchObject({
              ok: true,
              key: first.key,
              availableSince: first.since,
              acquiredAt: now,
              expiresAt: now + op.ttlMs,
            });
            if (!outcome.ok) break;
            const model = models.get(first.key) as KeyModel;
            // NOTE: record-first with an abandoned run (an expired grant taken over, or one recorded expired).
            const abandoned = model.grant !== null || model.endedExpired;
            expect(outcome.recoveryRequired, `recovery of ${first.key}`).toBe(op.recordFirst && abandoned);
            model.recovery = op.recordFirst && abandoned;
            lastGranted = first.key;
            model.endedExpired = false;
            model.grant = {
              expiresAt: now + op.ttlMs,
              fence: { key: first.key, token: outcome.token, secret: command.secret, holder: 'w', runId: null },
            };
            model.heldUntil = null;
            break;
          }
          case 'claim': {
            // NOTE: a plain claim of an item key takes it as claim-next would (and keeps its availability).
            const [key, model] = modelOf(op.pick);
            const secret = newSecret();
            const claimed = await store.claim({
              key,
              holder: 'c',
              runId: null,
              secret,
              ttlMs: op.ttlMs,
              attributes: {},
              recovering: false,
            });
            const now = nowOf(claimed);
            const since = Math.max(
              model.grant !== null ? model.grant.expiresAt : (model.endedAt ?? Number.NEGATIVE_INFINITY),
              model.heldUntil ?? Number.NEGATIVE_INFINITY,
            );
            expect(claimed.ok, `claim of ${key} at ${now}`).toBe(!model.recovery && since <= now);
            if (!claimed.ok) break;
            model.endedExpired = false;
            model.grant = { expiresAt: now + op.ttlMs, fence: { key, token: claimed.token, secret, holder: 'c', runId: null } };
            model.heldUntil = null;
            break;
          }
          case 'release': {
            const [, model] = modelOf(op.pick);
            if (model.grant === null) break;
            const released = await store.release({ fence: model.grant.fence, ...(op.holdMs === null ? {} : { holdMs: op.holdMs }) });
            const now = nowOf(released);
            expect(released.ok).toBe(now < model.grant.expiresAt);
            if (!released.ok) break;
            endGrant(model, now);
            model.endedExpired = false;
            if (op.holdMs !== null) model.heldUntil = now + op.holdMs;
            break;
          }
          case 'renew': {
            const [, model] = modelOf(op.pick);
            if (model.grant === null) break;
            const renewed = await store.renew({ fence: model.grant.fence, ttlMs: op.ttlMs });
            const now = nowOf(renewed);
            expect(renewed.ok).toBe(now < model.grant.expiresAt);
            if (renewed.ok) model.grant.expiresAt = now + op.ttlMs;
            break;
          }
          case 'checkpoint': {
            // NOTE: a checkpoint by the holder of the last claim-next grant (what a record-first holder does
            // first) resolves a pending recovery.
            if (lastGranted === null) break;
            const model = models.get(lastGranted) as KeyModel;
            if (model.grant === null) break;
            const saved = await store.checkpoint({ fence: model.grant.fence, json: '{"step":1}' });
            expect(saved.ok).toBe(nowOf(saved) < model.grant.expiresAt);
            if (saved.ok) model.recovery = false;
            break;
          }
          case 'revoke': {
            const [key, model] = modelOf(op.pick);
            const revoked = await store.revoke({ key, reason: 'ops', by: 'ops', requireRecovery: false, expectedToken: null });
            expect(revoked.ok).toBe(model.grant !== null);
            if (model.grant !== null) {
              model.grant = null;
              model.endedAt = nowOf(revoked);
              model.endedExpired = false;
              model.recovery = false;
            }
            break;
          }
          case 'state': {
            const [key, model] = modelOf(op.pick);
            const changed = await store.setKeyState({ key, values: { revision: newSecret() }, by: 'scanner' });
            endGrant(model, nowOf(changed));
            break;
          }
          case 'remove': {
            const [key, model] = modelOf(op.pick);
            const removed = await store.remove({ key, force: true, expectedToken: null });
            if (!removed.ok) break;
            model.grant = null;
            model.endedAt = null;
            model.heldUntil = null;
            model.recovery = false;
            model.endedExpired = false;
            break;
          }
          case 'removeItem': {
            const [key, model] = modelOf(op.pick);
            const removed = await store.removeItems({ set, keys: [key] });
            expect(removed.removed).toEqual(model.dueAt === null ? [] : [key]);
            model.dueAt = null;
            break;
          }
          case 'addItem': {
            const [key, model] = modelOf(op.pick);
            const again = await store.addItems({ set, keys: [key], notBeforeMs: op.delayMs });
            if (!again.ok) throw new Error('addItems refused');
            expect(again.added).toEqual(model.dueAt === null ? [key] : []);
            if (model.dueAt === null) model.dueAt = again.dueAt;
            break;
          }
        }
        await expectIndexKept(store, query, set, keys);
      }
    }),
    { numRuns: runs },
  );
}
