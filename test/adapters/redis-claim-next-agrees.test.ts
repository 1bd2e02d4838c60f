/**
 * Claim-next on real redis-server agrees with the memory store (the reference) step by step: random sequences of
 * claim-next (take-over or record-first, with or without a required key state, with or without expiry), release
 * (with or without a hold), renew (also to no expiry), checkpoint and a fenced write with a checkpoint (which
 * resolve a pending recovery), recover, revoke (with or without required recovery), key-state changes (some back to
 * an earlier value), remove, items removed and added, and real time passing. Each step runs on Redis first; the
 * memory store's manual clock is then set to the `now` Redis answered and the same step runs there. The outcomes
 * must agree (tokens aside: Redis mints from its clock, memory counts), and after every step Redis' index must
 * hold, for each item, memory's own `availableSince` of the key's record.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { createMemoryStore } from '../../src/adapters/memory/index.js';
import { toConnection } from '../../src/adapters/redis/connection.js';
import { createRedisStore, type RedisStore } from '../../src/adapters/redis/index.js';
import { createManualClock } from '../../src/clock.js';
import { availableSince, type ClaimNextCommand, type OnExpired } from '../../src/fence/claim-next.js';
import type { Fence } from '../../src/fence/types.js';
import { newSecret } from '../../src/secret.js';
import type { Store } from '../../src/store.js';
import { scaled } from '../support/scale.js';
import { freshPrefix, openClient, readyIndex, sharedRedisUrl } from './redis-harness.js';

type ItemStore = Store & Required<Pick<Store, 'addItems' | 'removeItems' | 'claimNext'>>;

const SET = 'agree';
const KEYS = ['{agree}:a', '{agree}:b', '{agree}:c'];
const TIERS = ['1', '2'];

type Op =
  | { kind: 'claimNext'; ttlMs: number | null; onExpired: OnExpired; tier: string | null }
  | { kind: 'release'; pick: number; holdMs: number | null }
  | { kind: 'renew'; pick: number; ttlMs: number | null }
  | { kind: 'checkpoint'; pick: number }
  | { kind: 'write'; pick: number }
  | { kind: 'recover'; pick: number; action: 'resume' | 'discard' }
  | { kind: 'revoke'; pick: number; requireRecovery: boolean }
  | { kind: 'state'; pick: number; tier: string }
  | { kind: 'hold'; pick: number; holdMs: number | null }
  | { kind: 'remove'; pick: number }
  | { kind: 'removeItem'; pick: number }
  | { kind: 'addItem'; pick: number; delayMs: number }
  | { kind: 'advance'; ms: number };

const pickArb = fc.nat({ max: 15 });
const ttlArb = fc.oneof({ weight: 8, arbitrary: fc.integer({ min: 1, max: 15 }) }, { weight: 1, arbitrary: fc.constant(null) });
const opArb: fc.Arbitrary<Op> = fc.oneof(
  {
    weight: 5,
    arbitrary: fc.record({
      kind: fc.constant('claimNext' as const),
      ttlMs: ttlArb,
      onExpired: fc.constantFrom<OnExpired>('take-over', 'record-first'),
      tier: fc.oneof({ weight: 3, arbitrary: fc.constant(null) }, { weight: 1, arbitrary: fc.constantFrom(...TIERS) }),
    }),
  },
  {
    weight: 3,
    arbitrary: fc.record({
      kind: fc.constant('release' as const),
      pick: pickArb,
      holdMs: fc.option(fc.integer({ min: 0, max: 40 }), { nil: null }),
    }),
  },
  fc.record({ kind: fc.constant('renew' as const), pick: pickArb, ttlMs: ttlArb }),
  fc.record({ kind: fc.constant('checkpoint' as const), pick: pickArb }),
  fc.record({ kind: fc.constant('write' as const), pick: pickArb }),
  fc.record({ kind: fc.constant('recover' as const), pick: pickArb, action: fc.constantFrom<'resume' | 'discard'>('resume', 'discard') }),
  fc.record({ kind: fc.constant('revoke' as const), pick: pickArb, requireRecovery: fc.boolean() }),
  { weight: 2, arbitrary: fc.record({ kind: fc.constant('state' as const), pick: pickArb, tier: fc.constantFrom(...TIERS) }) },
  fc.record({ kind: fc.constant('hold' as const), pick: pickArb, holdMs: fc.option(fc.integer({ min: 0, max: 40 }), { nil: null }) }),
  fc.record({ kind: fc.constant('remove' as const), pick: pickArb }),
  fc.record({ kind: fc.constant('removeItem' as const), pick: pickArb }),
  fc.record({ kind: fc.constant('addItem' as const), pick: pickArb, delayMs: fc.constantFrom(0, 0, 5, 30) }),
  { weight: 3, arbitrary: fc.record({ kind: fc.constant('advance' as const), ms: fc.integer({ min: 0, max: 40 }) }) },
);

/** The parts of an outcome both stores must agree on (tokens differ by design; a record's stamps are times). */
function comparable(outcome: unknown): unknown {
  return JSON.parse(
    JSON.stringify(outcome, (name, value: unknown) => {
      if (typeof value === 'bigint') return 'token';
      if (name === 'submissions') return undefined;
      return value;
    }),
  );
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

describe('claim-next on redis agrees with the memory store, step by step', () => {
  it('same outcomes for random sequences (record-first, recovery, expect, holds, no-expiry grants), and the index equals availableSince', async () => {
    const { client, close } = await openClient('ioredis', await sharedRedisUrl());
    const raw = toConnection(client);
    try {
      await fc.assert(
        fc.asyncProperty(fc.array(opArb, { minLength: 15, maxLength: 40, size: 'max' }), async (ops) => {
          const prefix = freshPrefix('lf-next-agree');
          const redis = createRedisStore({ client, prefix }) as RedisStore as ItemStore;
          const first = await redis.addItems({ set: SET, keys: KEYS });
          if (!first.ok) throw new Error('addItems refused');
          const clock = createManualClock(first.now);
          const memory = createMemoryStore({ clock });
          expect(comparable(await memory.addItems({ set: SET, keys: KEYS }))).toEqual(comparable(first));
          const grants: { redis: Fence; memory: Fence }[] = [];
          /** Each item's due time, from the outcomes of addItems and removeItems. */
          const memoryDueAt = new Map<string, number>(KEYS.map((key) => [key, first.dueAt as number]));
          /** Runs a step on Redis, then on memory at the time Redis answered; both outcomes must agree. */
          const both = async <T extends { now: number }>(
            step: (store: ItemStore, side: 'redis' | 'memory') => Promise<T>,
          ): Promise<[T, T]> => {
            const onRedis = await step(redis, 'redis');
            clock.set(Math.max(clock(), onRedis.now));
            const onMemory = await step(memory as ItemStore, 'memory');
            expect(comparable(onRedis)).toEqual(comparable(onMemory));
            return [onRedis, onMemory];
          };
          // NOTE: mostly the newest grant (a record-first take-over followed by its checkpoint, say), else any.
          const grant = (pick: number) => (pick < 10 ? grants.at(-1) : grants[pick % Math.max(grants.length, 1)]);
          for (const op of ops) {
            switch (op.kind) {
              case 'advance':
                await sleep(op.ms);
                break;
              case 'claimNext': {
                const secret = newSecret();
                const command: ClaimNextCommand = {
                  set: SET,
                  holder: 'w',
                  runId: `r${grants.length}`,
                  secret,
                  ttlMs: op.ttlMs,
                  attributes: {},
                  onExpired: op.onExpired,
                  ...(op.tier === null ? {} : { expect: { tier: op.tier } }),
                };
                const [onRedis, onMemory] = await both((store) => store.claimNext(command));
                if (onRedis.ok && onMemory.ok) {
                  const fence = { key: onRedis.key, secret, holder: 'w', runId: command.runId };
                  grants.push({ redis: { ...fence, token: onRedis.token }, memory: { ...fence, token: onMemory.token } });
                }
                break;
              }
              case 'release': {
                const held = grant(op.pick);
                if (held === undefined) break;
                await both((store, side) => store.release({ fence: held[side], ...(op.holdMs === null ? {} : { holdMs: op.holdMs }) }));
                break;
              }
              case 'renew': {
                const held = grant(op.pick);
                if (held !== undefined) await both((store, side) => store.renew({ fence: held[side], ttlMs: op.ttlMs }));
                break;
              }
              case 'checkpoint': {
                const held = grant(op.pick);
                if (held !== undefined) await both((store, side) => store.checkpoint({ fence: held[side], json: '{"step":1}' }));
                break;
              }
              case 'write': {
                const held = grant(op.pick);
                if (held === undefined) break;
                await both((store, side) =>
                  side === 'redis'
                    ? (store as unknown as RedisStore).fencedWrite(held.redis, (tx) => tx.call('SET', `${prefix}{agree}:out`, 'x'), {
                        checkpointJson: '{"step":2}',
                      })
                    : store.fencedWrite(held.memory, () => 'OK', { checkpointJson: '{"step":2}' }),
                );
                break;
              }
              case 'recover': {
                const held = grant(op.pick);
                if (held !== undefined) await both((store, side) => store.recover({ fence: held[side], action: op.action }));
                break;
              }
              case 'revoke': {
                const key = KEYS[op.pick % KEYS.length] as string;
                await both((store) =>
                  store.revoke({ key, reason: 'ops', by: 'ops', requireRecovery: op.requireRecovery, expectedToken: null }),
                );
                break;
              }
              case 'state': {
                const key = KEYS[op.pick % KEYS.length] as string;
                await both((store) => store.setKeyState({ key, values: { tier: op.tier }, by: 'ramp' }));
                break;
              }
              case 'hold': {
                const key = KEYS[op.pick % KEYS.length] as string;
                await both((store) => store.setKeyState({ key, values: {}, by: 'ops', holdMs: op.holdMs }));
                break;
              }
              case 'remove': {
                const key = KEYS[op.pick % KEYS.length] as string;
                await both((store) => store.remove({ key, force: true, expectedToken: null }));
                break;
              }
              case 'removeItem': {
                const key = KEYS[op.pick % KEYS.length] as string;
                const [removed] = await both((store) => store.removeItems({ set: SET, keys: [key] }));
                for (const each of removed.removed) memoryDueAt.delete(each);
                break;
              }
              case 'addItem': {
                const key = KEYS[op.pick % KEYS.length] as string;
                const [added] = await both((store) => store.addItems({ set: SET, keys: [key], notBeforeMs: op.delayMs }));
                if (added.ok) for (const each of added.added) memoryDueAt.set(each, added.dueAt);
                break;
              }
            }
            // NOTE: Redis' index, against memory's own records: each item scored by availableSince, nothing else.
            const index = await readyIndex(raw, prefix, SET);
            const expected: Record<string, number> = {};
            for (const key of KEYS) {
              const dueAt = memoryDueAt.get(key);
              if (dueAt === undefined) continue;
              const since = availableSince(memory.record(key) ?? null, { set: SET, key, dueAt });
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
  }, 240_000);
});
