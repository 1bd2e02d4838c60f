/**
 * Claim-next against a model kept from the outcomes alone (not from the store's records), for every store: random
 * sequences of claim-next (take-over or record-first), a plain claim of an item key, a checkpoint by the last
 * claim-next holder, release (with or without a hold), renew, revoke, a state change, remove, items removed and
 * added, and time passing. At every claim-next the model says which items are claimable and since when; the store
 * must grant the one available longest (ties by key), or answer idle exactly when none is, with the earliest time
 * one becomes claimable. The model judges each step at the `now` its outcome reports (the store's clock), so it
 * serves a manual clock and a server's real one alike. A store's own file adds only its store-specific check after
 * every step (its index equal to the model's availability).
 */
import fc from 'fast-check';
import { expect } from 'vitest';
import type { ClaimNextCommand } from '../../src/fence/claim-next.js';
import type { Fence } from '../../src/fence/types.js';
import { newSecret } from '../../src/secret.js';
import type { Store } from '../../src/store.js';

/** A store with claim-next's three methods. */
export type ItemStore = Store & Required<Pick<Store, 'addItems' | 'removeItems' | 'claimNext'>>;

/** One run's store and set (a fresh store, or a fresh set on a shared one). */
export interface ModelTarget {
  readonly store: ItemStore;
  readonly set: string;
  /** The keys the run uses, all items of `set` at the start (on Redis they carry the set's hash tag). */
  readonly keys: readonly string[];
  /** Lets `ms` pass on the store's clock (a manual clock's advance, or a real sleep). */
  readonly advance: (ms: number) => Promise<void>;
  /** The store's own check after every step; `expected` is each item's availability as the model computes it. */
  readonly check?: (expected: Readonly<Record<string, number>>) => Promise<void>;
}

/** The time scale of the generated steps, in ms (a manual clock takes hundreds; a server's real time, tens). */
export interface ModelTiming {
  /** A claim-next's longest TTL (short, so that expired grants are taken over often). */
  readonly claimNextTtlMs: number;
  /** A claim's or renew's longest TTL. */
  readonly ttlMs: number;
  readonly holdMs: number;
  readonly delaysMs: readonly number[];
  readonly advanceMs: number;
}

export interface ModelOptions {
  readonly keyCount: number;
  readonly timing: ModelTiming;
  readonly maxLength: number;
  /** fast-check's size of the step sequences (`'max'`: lengths up to `maxLength` as often as short ones). */
  readonly size?: fc.SizeForArbitrary;
  readonly runs: number;
  readonly target: (keyCount: number) => Promise<ModelTarget>;
}

/** What the model knows of one key, from outcomes: its live-or-expired grant, its last ending, hold and item. */
interface KeyModel {
  /** The current grant's expiry (the grant may have expired: then it is available since then). */
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

function opArbitrary(keyCount: number, timing: ModelTiming): fc.Arbitrary<Op> {
  const pickArb = fc.nat({ max: keyCount - 1 });
  const ttlArb = fc.integer({ min: 1, max: timing.ttlMs });
  return fc.oneof(
    {
      weight: 6,
      arbitrary: fc.record({
        kind: fc.constant('claimNext' as const),
        ttlMs: fc.integer({ min: 1, max: timing.claimNextTtlMs }),
        recordFirst: fc.boolean(),
      }),
    },
    { weight: 2, arbitrary: fc.record({ kind: fc.constant('checkpoint' as const) }) },
    {
      weight: 3,
      arbitrary: fc.record({
        kind: fc.constant('release' as const),
        pick: pickArb,
        holdMs: fc.option(fc.integer({ min: 0, max: timing.holdMs }), { nil: null }),
      }),
    },
    fc.record({ kind: fc.constant('renew' as const), pick: pickArb, ttlMs: ttlArb }),
    { weight: 2, arbitrary: fc.record({ kind: fc.constant('revoke' as const), pick: pickArb }) },
    { weight: 2, arbitrary: fc.record({ kind: fc.constant('state' as const), pick: pickArb }) },
    fc.record({ kind: fc.constant('remove' as const), pick: pickArb }),
    fc.record({ kind: fc.constant('removeItem' as const), pick: pickArb }),
    fc.record({ kind: fc.constant('addItem' as const), pick: pickArb, delayMs: fc.constantFrom(...timing.delaysMs) }),
    fc.record({ kind: fc.constant('claim' as const), pick: pickArb, ttlMs: ttlArb }),
    { weight: 3, arbitrary: fc.record({ kind: fc.constant('advance' as const), ms: fc.integer({ min: 0, max: timing.advanceMs }) }) },
  );
}

/** Since when the model says the key is claimable (null: not an item, or blocked for recovery). */
function availableFrom(model: KeyModel): number | null {
  if (model.dueAt === null || model.recovery) return null;
  const end = model.grant !== null ? model.grant.expiresAt : model.endedAt;
  return Math.max(model.dueAt, end ?? Number.NEGATIVE_INFINITY, model.heldUntil ?? Number.NEGATIVE_INFINITY);
}

const nowOf = (outcome: unknown): number => (outcome as { now: number }).now;

/** Runs the model property: `options.runs` random sequences, each on a target `options.target` makes. */
export async function runClaimNextModel(options: ModelOptions): Promise<void> {
  const { keyCount } = options;
  await fc.assert(
    fc.asyncProperty(
      fc.array(opArbitrary(keyCount, options.timing), {
        minLength: 1,
        maxLength: options.maxLength,
        ...(options.size === undefined ? {} : { size: options.size }),
      }),
      async (ops) => {
        const { store, set, keys, advance, check } = await options.target(keyCount);
        const added = await store.addItems({ set, keys });
        if (!added.ok) throw new Error('addItems refused');
        const models = new Map<string, KeyModel>(
          keys.map((key) => [
            key,
            { grant: null, endedAt: null, heldUntil: null, dueAt: added.dueAt, recovery: false, endedExpired: false },
          ]),
        );
        const modelOf = (index: number): [string, KeyModel] => [keys[index] as string, models.get(keys[index] as string) as KeyModel];
        let lastGranted: string | null = null;
        /** Ends the model's grant of `model` at `at` (a release, state change), or at its expiry if earlier. */
        const endGrant = (model: KeyModel, at: number): void => {
          if (model.grant === null) return;
          model.endedExpired = model.grant.expiresAt <= at;
          model.endedAt = Math.min(at, model.grant.expiresAt);
          model.grant = null;
        };
        for (const op of ops) {
          switch (op.kind) {
            case 'advance':
              await advance(op.ms);
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
              // NOTE: a grant clears a passed hold (transitions.claim).
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
              // NOTE: a revoke ends the grant now even when it had expired (its ending is stamped now), which puts
              // the item behind the ones that were waiting.
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
              // NOTE: a new value every time: the change ends the grant (live: state-changed; expired: expired).
              const changed = await store.setKeyState({ key, values: { revision: newSecret() }, by: 'scanner' });
              endGrant(model, nowOf(changed));
              break;
            }
            case 'remove': {
              const [key, model] = modelOf(op.pick);
              const removed = await store.remove({ key, force: true, expectedToken: null });
              if (!removed.ok) break;
              // NOTE: the record is gone (grant, ending, hold, recovery); the item stays, available since its due time.
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
              if (model.dueAt === null) model.dueAt = again.now + op.delayMs;
              break;
            }
          }
          if (check !== undefined) {
            const expected: Record<string, number> = {};
            for (const [key, model] of models) {
              const since = availableFrom(model);
              if (since !== null) expected[key] = since;
            }
            await check(expected);
          }
        }
      },
    ),
    { numRuns: options.runs },
  );
}
