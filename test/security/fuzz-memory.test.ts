/**
 * The fuzz property (issue 9) on the memory store: I/O is counted by a spy around the store. Runs
 * `FUZZ_RUNS` cases (default 3,000).
 */
import { describe, it } from 'vitest';
import { assertFuzzProperty } from './fuzz-property.js';
import { memoryFuzzTarget } from './memory-fuzz-target.js';

const RUNS = Number(process.env['FUZZ_RUNS'] ?? 3_000);

describe('fuzz: every public method on the memory store', () => {
  it(`either INVALID_ARGUMENT before any I/O with every lease unchanged, or a normal result (${RUNS} runs)`, async () => {
    await assertFuzzProperty(await memoryFuzzTarget(), RUNS);
  }, 60_000 + RUNS * 20);
});
