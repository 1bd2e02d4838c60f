/**
 * Claim-next on real redis-server against a model kept from the outcomes alone (test/claim-next/memory-model.test.ts,
 * adapted: no manual clock on Redis, so time passes for real, TTLs, holds and delays are tens of ms, and the model
 * judges each step at the `now` its outcome reports, the server's clock of that script). Random sequences of
 * claim-next, release (with or without a hold), renew, revoke, a state change, remove, items removed and added,
 * and time passing: at every claim-next the store must grant the item the model says is available longest (ties
 * by key), or answer idle exactly when none is, with the earliest time one becomes claimable; after every step the
 * set's sorted set must hold exactly each item's availability as the model computes it.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { createRedisStore, type RedisStore } from '../../src/adapters/redis/index.js';
import { toConnection } from '../../src/adapters/redis/connection.js';
import type { ClaimNextCommand } from '../../src/fence/claim-next.js';
import type { Fence } from '../../src/fence/types.js';
import { newSecret } from '../../src/secret.js';
import { scaled } from '../support/scale.js';
import { freshPrefix, openClient, sharedRedisUrl, type RedisClientKind } from './redis-harness.js';

const SET = 'model';
const KEYS = ['{model}:a', '{model}:b', '{model}:c', '{model}:d', '{model}:e'];

type ItemStore = RedisStore & Required<Pick<RedisStore, 'addItems' | 'removeItems' | 'claimNext'>>;

/** What the model knows of one key, from outcomes: its live-or-expired grant, its last ending, hold and item. */
interface KeyModel {
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
  { weight: 4, arbitrary: fc.record({ kind: fc.constant('claimNext' as const), ttlMs: fc.integer({ min: 1, max: 40 }) }) },
  {
    weight: 3,
    arbitrary: fc.record({
      kind: fc.constant('release' as const),
      pick: pickArb,
      holdMs: fc.option(fc.integer({ min: 0, max: 40 }), { nil: null }),
    }),
  },
  fc.record({ kind: fc.constant('renew' as const), pick: pickArb, ttlMs: fc.integer({ min: 1, max: 40 }) }),
  { weight: 2, arbitrary: fc.record({ kind: fc.constant('revoke' as const), pick: pickArb }) },
  { weight: 2, arbitrary: fc.record({ kind: fc.constant('state' as const), pick: pickArb }) },
  fc.record({ kind: fc.constant('remove' as const), pick: pickArb }),
  fc.record({ kind: fc.constant('removeItem' as const), pick: pickArb }),
  fc.record({ kind: fc.constant('addItem' as const), pick: pickArb, delayMs: fc.constantFrom(0, 0, 5, 40) }),
  { weight: 4, arbitrary: fc.record({ kind: fc.constant('advance' as const), ms: fc.integer({ min: 0, max: 40 }) }) },
);

/** Since when the model says the key is claimable (null: not an item). */
function availableFrom(model: KeyModel): number | null {
  if (model.dueAt === null) return null;
  const end = model.grant !== null ? model.grant.expiresAt : model.endedAt;
  return Math.max(model.dueAt, end ?? Number.NEGATIVE_INFINITY, model.heldUntil ?? Number.NEGATIVE_INFINITY);
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

describe.each<RedisClientKind>(['ioredis', 'node-redis'])('claim-next on redis (%s), against a model kept from outcomes', (kind) => {
  it('grants the claimable item available longest (then by key), idle exactly when none is, with the right nextAt; the index equals the model', async () => {
    const { client, close } = await openClient(kind, await sharedRedisUrl());
    const raw = toConnection(client);
    try {
      await fc.assert(
        fc.asyncProperty(fc.array(opArb, { minLength: 1, maxLength: 40 }), async (ops) => {
          const prefix = freshPrefix('lf-next-model');
          const store = createRedisStore({ client, prefix }) as ItemStore;
          const added = await store.addItems({ set: SET, keys: KEYS });
          if (!added.ok) throw new Error('addItems refused');
          const models = new Map<string, KeyModel>(
            KEYS.map((key) => [key, { grant: null, endedAt: null, heldUntil: null, dueAt: added.dueAt }]),
          );
          const modelOf = (index: number): [string, KeyModel] => [KEYS[index] as string, models.get(KEYS[index] as string) as KeyModel];
          const endGrant = (model: KeyModel, at: number): void => {
            if (model.grant === null) return;
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
                  set: SET,
                  holder: 'w',
                  runId: null,
                  secret: newSecret(),
                  ttlMs: op.ttlMs,
                  attributes: {},
                  onExpired: 'take-over',
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
                model.heldUntil = null;
                break;
              }
              case 'release': {
                const [, model] = modelOf(op.pick);
                if (model.grant === null) break;
                const released = await store.release({ fence: model.grant.fence, ...(op.holdMs === null ? {} : { holdMs: op.holdMs }) });
                const live = released.now < model.grant.expiresAt;
                expect(released.ok).toBe(live);
                if (!live) break;
                endGrant(model, released.now);
                if (op.holdMs !== null) model.heldUntil = released.now + op.holdMs;
                break;
              }
              case 'renew': {
                const [, model] = modelOf(op.pick);
                if (model.grant === null) break;
                const renewed = await store.renew({ fence: model.grant.fence, ttlMs: op.ttlMs });
                expect(renewed.ok).toBe(renewed.now < model.grant.expiresAt);
                if (renewed.ok) model.grant.expiresAt = renewed.now + op.ttlMs;
                break;
              }
              case 'revoke': {
                const [key, model] = modelOf(op.pick);
                const revoked = await store.revoke({ key, reason: 'ops', by: 'ops', requireRecovery: false, expectedToken: null });
                expect(revoked.ok).toBe(model.grant !== null);
                if (model.grant !== null) {
                  model.grant = null;
                  model.endedAt = revoked.now;
                }
                break;
              }
              case 'state': {
                const [key, model] = modelOf(op.pick);
                const changed = await store.setKeyState({ key, values: { revision: newSecret() }, by: 'scanner' });
                endGrant(model, changed.now);
                break;
              }
              case 'remove': {
                const [key, model] = modelOf(op.pick);
                const removed = await store.remove({ key, force: true, expectedToken: null });
                if (!removed.ok) break;
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
                if (model.dueAt === null) model.dueAt = again.now + op.delayMs;
                break;
              }
            }
            // NOTE: the index itself, after every step: each item scored by its availability, nothing else in it.
            const scored = (await raw.send(['ZRANGE', `${prefix}{${SET}}:ready`, '0', '-1', 'WITHSCORES'])) as string[];
            const index: Record<string, number> = {};
            for (let at = 0; at < scored.length; at += 2) index[scored[at] as string] = Number(scored[at + 1]);
            const expected: Record<string, number> = {};
            for (const [key, model] of models) {
              const since = availableFrom(model);
              if (since !== null) expected[key] = since;
            }
            expect(index).toEqual(expected);
          }
        }),
        { numRuns: scaled(40) },
      );
    } finally {
      await close();
    }
  }, 180_000);
});
