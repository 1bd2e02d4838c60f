/**
 * The fuzz property, differential: each sampled call runs on memory, SQLite, Postgres and Redis (each from
 * the same fresh set-up) and every store must answer it alike: all refuse it as INVALID_ARGUMENT, or all
 * throw the same typed error, or all give a result with the same `ok` / `reason`. Runs 300
 * calls (times LEASEFENCE_TEST_SCALE).
 */
import fc from 'fast-check';
import { afterAll, describe, expect, it } from 'vitest';
import { answerCall, calls, type CallAnswer } from './fuzz-property.js';
import { postgresFuzzTarget, redisFuzzTarget, sqliteFuzzTarget, type Closers } from './fuzz-targets.js';
import { memoryFuzzTarget } from './memory-fuzz-target.js';
import { scaled } from '../support/scale.js';

const RUNS = scaled(300);
const closers: Closers = [];
afterAll(async () => {
  for (const close of closers.reverse()) await close();
});

describe('fuzz: every store answers the same input alike', () => {
  it(
    `memory, SQLite, Postgres and Redis: the same class of answer and the same reason (${RUNS} calls)`,
    async () => {
      const targets = {
        // NOTE: tokens floored at the clock in microseconds, as the durable stores mint them, so that an
        // `expectedToken` of 1 to 5 is stale on every store alike.
        memory: await memoryFuzzTarget({ tokenFloor: () => BigInt(Date.now()) * 1000n }),
        sqlite: await sqliteFuzzTarget(closers),
        postgres: await postgresFuzzTarget(closers),
        redis: await redisFuzzTarget(closers),
      };
      await fc.assert(
        fc.asyncProperty(calls(true), async (recipe) => {
          const answers: Record<string, CallAnswer> = {};
          for (const [name, target] of Object.entries(targets)) answers[name] = await answerCall(target, recipe);
          expect(answers.sqlite, `${recipe.method} on SQLite`).toEqual(answers.memory);
          expect(answers.postgres, `${recipe.method} on Postgres`).toEqual(answers.memory);
          expect(answers.redis, `${recipe.method} on Redis`).toEqual(answers.memory);
        }),
        { numRuns: RUNS },
      );
    },
    60_000 + RUNS * 200,
  );
});
