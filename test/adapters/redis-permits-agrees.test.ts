/**
 * Semaphores on real redis-server agree with the memory store (the reference) step by step: random sequences of
 * acquires (limits 1 to 4, with or without expiry, some recovering), acquires delivered again, releases (with or
 * without a hold), checkpoints and fenced writes with a checkpoint, recovers, revokes (with or without required
 * recovery), holds set on a permit key, removes, plain claims of permit keys (also above every limit), permit keys
 * made items of the semaphore's set and granted by claim-next, and real time passing. Each step runs on Redis
 * first; the memory store's manual clock is then set to the `now` Redis answered and the same step runs there. The
 * outcomes must agree field by field (tokens aside: Redis mints from its clock, memory counts), `full`'s live
 * holders, unavailable permits and nextAt included; and Redis' tokens must rise.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { createMemoryStore } from '../../src/adapters/memory/index.js';
import { createRedisStore, type RedisStore } from '../../src/adapters/redis/index.js';
import { createManualClock } from '../../src/clock.js';
import { permitKey, type AcquirePermitCommand } from '../../src/fence/permits.js';
import type { Fence } from '../../src/fence/types.js';
import { newSecret } from '../../src/secret.js';
import type { Store } from '../../src/store.js';
import { scaled } from '../support/scale.js';
import { freshPrefix, openClient, sharedRedisUrl } from './redis-harness.js';

type PermitStore = Store & Required<Pick<Store, 'acquirePermit'>>;
type ItemStore = PermitStore & Required<Pick<Store, 'addItems' | 'claimNext'>>;

const NAME = 'agree';

type Op =
  | { kind: 'acquire'; limit: number; ttlMs: number | null; recovering: boolean }
  | { kind: 'again'; pick: number }
  | { kind: 'release'; pick: number; holdMs: number | null }
  | { kind: 'checkpoint'; pick: number }
  | { kind: 'write'; pick: number }
  | { kind: 'recover'; pick: number; action: 'resume' | 'discard' }
  | { kind: 'revoke'; index: number; requireRecovery: boolean }
  | { kind: 'hold'; index: number; holdMs: number | null }
  | { kind: 'remove'; index: number }
  | { kind: 'claim'; index: number; ttlMs: number | null }
  | { kind: 'item'; index: number }
  | { kind: 'next'; ttlMs: number | null }
  | { kind: 'advance'; ms: number };

const pickArb = fc.nat({ max: 15 });
const indexArb = fc.integer({ min: 1, max: 5 });
const ttlArb = fc.oneof({ weight: 8, arbitrary: fc.integer({ min: 1, max: 20 }) }, { weight: 1, arbitrary: fc.constant(null) });
const opArb: fc.Arbitrary<Op> = fc.oneof(
  {
    weight: 6,
    arbitrary: fc.record({
      kind: fc.constant('acquire' as const),
      limit: fc.integer({ min: 1, max: 4 }),
      ttlMs: ttlArb,
      recovering: fc.oneof({ weight: 5, arbitrary: fc.constant(false) }, { weight: 1, arbitrary: fc.constant(true) }),
    }),
  },
  fc.record({ kind: fc.constant('again' as const), pick: pickArb }),
  {
    weight: 3,
    arbitrary: fc.record({
      kind: fc.constant('release' as const),
      pick: pickArb,
      holdMs: fc.option(fc.integer({ min: 0, max: 30 }), { nil: null }),
    }),
  },
  fc.record({ kind: fc.constant('checkpoint' as const), pick: pickArb }),
  fc.record({ kind: fc.constant('write' as const), pick: pickArb }),
  fc.record({ kind: fc.constant('recover' as const), pick: pickArb, action: fc.constantFrom<'resume' | 'discard'>('resume', 'discard') }),
  fc.record({ kind: fc.constant('revoke' as const), index: indexArb, requireRecovery: fc.boolean() }),
  fc.record({ kind: fc.constant('hold' as const), index: indexArb, holdMs: fc.option(fc.integer({ min: 0, max: 30 }), { nil: null }) }),
  fc.record({ kind: fc.constant('remove' as const), index: indexArb }),
  fc.record({ kind: fc.constant('claim' as const), index: fc.integer({ min: 1, max: 6 }), ttlMs: ttlArb }),
  fc.record({ kind: fc.constant('item' as const), index: fc.integer({ min: 1, max: 6 }) }),
  fc.record({ kind: fc.constant('next' as const), ttlMs: ttlArb }),
  { weight: 3, arbitrary: fc.record({ kind: fc.constant('advance' as const), ms: fc.integer({ min: 0, max: 25 }) }) },
);

/** The parts of an outcome both stores must agree on (tokens differ by design). */
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

describe('semaphores on redis agree with the memory store, step by step', () => {
  it('same outcomes for random sequences (limits, re-deliveries, recovery, holds, removes, plain claims of permits)', async () => {
    const { client, close } = await openClient('ioredis', await sharedRedisUrl());
    try {
      await fc.assert(
        fc.asyncProperty(fc.array(opArb, { minLength: 15, maxLength: 50, size: 'max' }), async (ops) => {
          const prefix = freshPrefix('lf-permit-agree');
          const redis = createRedisStore({ client, prefix }) as RedisStore as PermitStore;
          const clock = createManualClock(0);
          const memory = createMemoryStore({ clock });
          const grants: { redis: Fence; memory: Fence }[] = [];
          const commands: AcquirePermitCommand[] = [];
          let highest = 0n;
          /** Runs a step on Redis, then on memory at the time Redis answered; both outcomes must agree. */
          const both = async <T extends { now: number }>(
            step: (store: PermitStore, side: 'redis' | 'memory') => Promise<T>,
          ): Promise<[T, T]> => {
            const onRedis = await step(redis, 'redis');
            clock.set(Math.max(clock(), onRedis.now));
            const onMemory = await step(memory as PermitStore, 'memory');
            expect(comparable(onRedis)).toEqual(comparable(onMemory));
            return [onRedis, onMemory];
          };
          const grant = (pick: number) => (pick < 8 ? grants.at(-1) : grants[pick % Math.max(grants.length, 1)]);
          const granted = (key: string, token: bigint, secret: string, runId: string, memoryToken: bigint): void => {
            // NOTE: Redis' tokens rise across the semaphore (memory's too, by the same comparison above).
            if (token <= highest) throw new Error(`redis granted ${key} with ${token}, not above ${highest}`);
            highest = token;
            const fence = { key, secret, holder: 'w', runId };
            grants.push({ redis: { ...fence, token }, memory: { ...fence, token: memoryToken } });
          };
          for (const op of ops) {
            switch (op.kind) {
              case 'advance':
                await sleep(op.ms);
                break;
              case 'acquire':
              case 'again': {
                const command: AcquirePermitCommand | undefined =
                  op.kind === 'acquire'
                    ? {
                        semaphore: NAME,
                        limit: op.limit,
                        holder: 'w',
                        runId: `r${commands.length}`,
                        secret: newSecret(),
                        ttlMs: op.ttlMs,
                        attributes: {},
                        recovering: op.recovering,
                      }
                    : commands[op.pick % Math.max(commands.length, 1)];
                if (command === undefined) break;
                commands.push(command);
                const [onRedis, onMemory] = await both((store) => store.acquirePermit(command));
                if (onRedis.ok && onMemory.ok && onRedis.token > highest)
                  granted(onRedis.key, onRedis.token, command.secret, command.runId as string, onMemory.token);
                break;
              }
              case 'claim': {
                const secret = newSecret();
                const runId = `c${grants.length}`;
                const key = permitKey(NAME, op.index);
                const command = { key, holder: 'w', runId, secret, ttlMs: op.ttlMs, attributes: {}, recovering: false };
                const [onRedis, onMemory] = await both((store) => store.claim(command));
                if (onRedis.ok && onMemory.ok && onRedis.token > highest) granted(key, onRedis.token, secret, runId, onMemory.token);
                break;
              }
              case 'item':
                await both((store) => (store as ItemStore).addItems({ set: NAME, keys: [permitKey(NAME, op.index)] }));
                break;
              case 'next': {
                const secret = newSecret();
                const runId = `n${grants.length}`;
                const command = { set: NAME, holder: 'w', runId, secret, ttlMs: op.ttlMs, attributes: {}, onExpired: 'take-over' as const };
                const [onRedis, onMemory] = await both((store) => (store as ItemStore).claimNext(command));
                if (onRedis.ok && onMemory.ok && onRedis.token > highest)
                  granted(onRedis.key, onRedis.token, secret, runId, onMemory.token);
                break;
              }
              case 'release': {
                const held = grant(op.pick);
                if (held === undefined) break;
                await both((store, side) => store.release({ fence: held[side], ...(op.holdMs === null ? {} : { holdMs: op.holdMs }) }));
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
                    ? (store as unknown as RedisStore).fencedWrite(held.redis, (tx) => tx.call('SET', `${prefix}{${NAME}}:out`, 'x'), {
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
              case 'revoke':
                await both((store) =>
                  store.revoke({
                    key: permitKey(NAME, op.index),
                    reason: 'ops',
                    by: 'ops',
                    requireRecovery: op.requireRecovery,
                    expectedToken: null,
                  }),
                );
                break;
              case 'hold':
                await both((store) => store.setKeyState({ key: permitKey(NAME, op.index), values: {}, by: 'ops', holdMs: op.holdMs }));
                break;
              case 'remove':
                await both((store) => store.remove({ key: permitKey(NAME, op.index), force: true, expectedToken: null }));
                break;
            }
          }
        }),
        { numRuns: scaled(40) },
      );
    } finally {
      await close();
    }
  }, 240_000);
});
