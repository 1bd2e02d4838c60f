/**
 * The fuzz property (issue 9) on the memory store: I/O is counted by a spy around the store. Runs
 * `FUZZ_RUNS` cases (default 3,000).
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { calls, runCall } from './fuzz-property.js';
import { memoryFuzzTarget } from './memory-fuzz-target.js';

const RUNS = Number(process.env['FUZZ_RUNS'] ?? 3_000);

describe('fuzz: every public method on the memory store', () => {
  it(`either INVALID_ARGUMENT before any I/O with every lease unchanged, or a normal result (${RUNS} runs)`, async () => {
    const target = await memoryFuzzTarget();
    const endings = { invalid: 0, result: 0, typed: 0 };
    await fc.assert(
      fc.asyncProperty(calls(true), async (recipe) => {
        endings[await runCall(target, recipe)] += 1;
      }),
      { numRuns: RUNS },
    );
    // NOTE: the mix must reach both sides of the property, or it proves little.
    expect(endings.invalid).toBeGreaterThan(RUNS / 10);
    expect(endings.result).toBeGreaterThan(RUNS / 10);
  }, 60_000 + RUNS * 20);
});
