/**
 * Claim-next against a model kept from the outcomes alone (not from the store's records): random sequences of
 * claim-next, release (with or without a hold), renew, revoke, a state change, remove, items added and removed and
 * time passing, on the memory store. At every claim-next the model says which items are claimable and since when;
 * the store must grant the one available longest (ties by key), or answer idle exactly when none is, with the
 * earliest time one becomes claimable. A template for the server stores' model test (it reads only outcomes).
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { createMemoryStore } from '../../src/adapters/memory/index.js';
import { createManualClock } from '../../src/clock.js';
import type { ClaimNextCommand } from '../../src/fence/claim-next.js';
import type { Fence } from '../../src/fence/types.js';
import { newSecret } from '../../src/secret.js';
import { scaled } from '../support/scale.js';

const SET = 'model';
const KEYS = ['{model}:a', '{model}:b', '{model}:c', '{model}:d', '{model}:e'];

/** What the model knows of one key, from outcomes: its live-or-expired grant, its last ending, hold and item. */
interface KeyModel {
  /** The current grant's expiry (the grant may have expired: then it is available since then). */
  grant: { expiresAt: number; fence: Fence } | null;
  endedAt: number | null;
  heldUntil: number | null;
  /** Its due time while it is an item of the set; `null`: not an item. */
  dueAt: number | null;
}

type Op =
  | { kind: 'claimNext'; ttlMs: number }
  | { kind: 'release'; pick: number; holdMs: number | null }
  | { kind: 'renew'; pick: number; ttlMs: number }
  | { kind: 'revoke'; pick: number }
  | { kind: 'state'; pick: number }
  | { kind: 'remove'; pick: number }
  | { kind: 'removeItem'; pick: number }
  | { kind: 'addItem'; pick: number; delayMs: number }
  | { kind: 'advance'; ms: number };

const pickArb = fc.nat({ max: KEYS.length - 1 });
const opArb: fc.Arbitrary<Op> = fc.oneof(
  { weight: 4, arbitrary: fc.record({ kind: fc.constant('claimNext' as const), ttlMs: fc.integer({ min: 1, max: 300 }) }) },
  {
    weight: 3,
    arbitrary: fc.record({
      kind: fc.constant('release' as const),
      pick: pickArb,
      holdMs: fc.option(fc.integer({ min: 0, max: 300 }), { nil: null }),
    }),
  },
  fc.record({ kind: fc.constant('renew' as const), pick: pickArb, ttlMs: fc.integer({ min: 1, max: 300 }) }),
  { weight: 2, arbitrary: fc.record({ kind: fc.constant('revoke' as const), pick: pickArb }) },
  { weight: 2, arbitrary: fc.record({ kind: fc.constant('state' as const), pick: pickArb }) },
  fc.record({ kind: fc.constant('remove' as const), pick: pickArb }),
  fc.record({ kind: fc.constant('removeItem' as const), pick: pickArb }),
  fc.record({ kind: fc.constant('addItem' as const), pick: pickArb, delayMs: fc.constantFrom(0, 0, 50, 400) }),
  { weight: 4, arbitrary: fc.record({ kind: fc.constant('advance' as const), ms: fc.integer({ min: 0, max: 400 }) }) },
);

/** Since when the model says the key is claimable (null: not an item, or a live grant without end known). */
function availableFrom(model: KeyModel): number | null {
  if (model.dueAt === null) return null;
  const end = model.grant !== null ? model.grant.expiresAt : model.endedAt;
  return Math.max(model.dueAt, end ?? Number.NEGATIVE_INFINITY, model.heldUntil ?? Number.NEGATIVE_INFINITY);
}

describe('claim-next on memory, against a model kept from outcomes', () => {
  it('grants the claimable item available longest (then by key), idle exactly when none is, with the right nextAt', async () => {
    await fc.assert(
      fc.asyncProperty(fc.array(opArb, { minLength: 1, maxLength: 80 }), async (ops) => {
        const clock = createManualClock(1_000_000);
        const store = createMemoryStore({ clock });
        const added = await store.addItems({ set: SET, keys: KEYS });
        if (!added.ok) throw new Error('addItems refused');
        const models = new Map<string, KeyModel>(
          KEYS.map((key) => [key, { grant: null, endedAt: null, heldUntil: null, dueAt: added.dueAt }]),
        );
        const modelOf = (index: number): [string, KeyModel] => [KEYS[index] as string, models.get(KEYS[index] as string) as KeyModel];
        /** Ends the model's grant of `model` at `at` (a release, revoke, state change), or at its expiry if earlier. */
        const endGrant = (model: KeyModel, at: number): void => {
          if (model.grant === null) return;
          model.endedAt = Math.min(at, model.grant.expiresAt);
          model.grant = null;
        };
        for (const op of ops) {
          const now = clock();
          switch (op.kind) {
            case 'advance':
              clock.advance(op.ms);
              break;
            case 'claimNext': {
              const command: ClaimNextCommand = {
                set: SET,
                holder: 'w',
                runId: null,
                secret: newSecret(),
                ttlMs: op.ttlMs,
                attributes: {},
                onExpired: 'take-over',
              };
              const claimable = [...models]
                .map(([key, model]) => ({ key, since: availableFrom(model) }))
                .filter((entry): entry is { key: string; since: number } => entry.since !== null);
              const ready = claimable.filter((entry) => entry.since <= now).sort((a, b) => a.since - b.since || (a.key < b.key ? -1 : 1));
              const outcome = await store.claimNext(command);
              const first = ready[0];
              if (first === undefined) {
                const later = claimable.map((entry) => entry.since);
                expect(outcome).toEqual({
                  ok: false,
                  reason: 'idle',
                  set: SET,
                  nextAt: later.length === 0 ? null : Math.min(...later),
                  now,
                });
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
              model.grant = {
                expiresAt: now + op.ttlMs,
                fence: { key: first.key, token: outcome.token, secret: command.secret, holder: 'w', runId: null },
              };
              // NOTE: a grant clears a passed hold (transitions.claim).
              model.heldUntil = null;
              break;
            }
            case 'release': {
              const [, model] = modelOf(op.pick);
              if (model.grant === null) break;
              const live = now < model.grant.expiresAt;
              const released = await store.release({ fence: model.grant.fence, ...(op.holdMs === null ? {} : { holdMs: op.holdMs }) });
              expect(released.ok).toBe(live);
              if (!live) break;
              endGrant(model, now);
              if (op.holdMs !== null) model.heldUntil = now + op.holdMs;
              break;
            }
            case 'renew': {
              const [, model] = modelOf(op.pick);
              if (model.grant === null) break;
              const renewed = await store.renew({ fence: model.grant.fence, ttlMs: op.ttlMs });
              expect(renewed.ok).toBe(now < model.grant.expiresAt);
              if (renewed.ok) model.grant.expiresAt = now + op.ttlMs;
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
                model.endedAt = now;
              }
              break;
            }
            case 'state': {
              const [key, model] = modelOf(op.pick);
              // NOTE: a new value every time: the change ends the grant (live: state-changed; expired: expired).
              await store.setKeyState({ key, values: { revision: newSecret() }, by: 'scanner' });
              endGrant(model, now);
              break;
            }
            case 'remove': {
              const [key, model] = modelOf(op.pick);
              const removed = await store.remove({ key, force: true, expectedToken: null });
              if (!removed.ok) break;
              // NOTE: the record is gone (grant, ending, hold); the item stays, available since its due time.
              model.grant = null;
              model.endedAt = null;
              model.heldUntil = null;
              break;
            }
            case 'removeItem': {
              const [key, model] = modelOf(op.pick);
              const removed = await store.removeItems({ set: SET, keys: [key] });
              expect(removed.removed).toEqual(model.dueAt === null ? [] : [key]);
              model.dueAt = null;
              break;
            }
            case 'addItem': {
              const [key, model] = modelOf(op.pick);
              const again = await store.addItems({ set: SET, keys: [key], notBeforeMs: op.delayMs });
              if (!again.ok) throw new Error('addItems refused');
              expect(again.added).toEqual(model.dueAt === null ? [key] : []);
              if (model.dueAt === null) model.dueAt = now + op.delayMs;
              break;
            }
          }
        }
      }),
      { numRuns: scaled(200) },
    );
  });
});
