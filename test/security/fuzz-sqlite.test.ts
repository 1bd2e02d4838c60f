/**
 * The fuzz property (issue 9) on SQLite (better-sqlite3), the store `fuzz-servers.test.ts` leaves out: I/O
 * is counted on the fuzzed connection (every statement run and every `exec`). Runs `FUZZ_SQLITE_RUNS`
 * cases (default 1,000, about a second).
 */
import fc from 'fast-check';
import { afterAll, describe, expect, it } from 'vitest';
import { calls, runCall } from './fuzz-property.js';
import { sqliteFuzzTarget, type Closers } from './fuzz-targets.js';

const RUNS = Number(process.env['FUZZ_SQLITE_RUNS'] ?? 1_000);
const closers: Closers = [];
afterAll(async () => {
  for (const close of closers.reverse()) await close();
});

describe('fuzz: every public method on SQLite', () => {
  it(`better-sqlite3: INVALID_ARGUMENT with no statement run and leases unchanged, or a normal result (${RUNS} runs)`, async () => {
    const target = await sqliteFuzzTarget(closers);
    const endings = { invalid: 0, result: 0, typed: 0 };
    await fc.assert(
      fc.asyncProperty(calls(true), async (recipe) => {
        endings[await runCall(target, recipe)] += 1;
      }),
      { numRuns: RUNS },
    );
    expect(endings.invalid).toBeGreaterThan(RUNS / 10);
    expect(endings.result).toBeGreaterThan(RUNS / 10);
  }, 60_000 + RUNS * 100);
});
