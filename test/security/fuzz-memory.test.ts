/**
 * The fuzz property (issue 9) on the memory store: I/O is counted by a spy around the store. Runs
 * 3,000 cases (times LEASEFENCE_TEST_SCALE).
 */
import { describe, it } from 'vitest';
import { assertFuzzProperty } from './fuzz-property.js';
import { memoryFuzzTarget } from './memory-fuzz-target.js';
import { scaled } from '../support/scale.js';

const RUNS = scaled(3_000);

describe('fuzz: every public method on the memory store', () => {
  it(
    `either INVALID_ARGUMENT before any I/O with every lease unchanged, or a normal result (${RUNS} runs)`,
    async () => {
      await assertFuzzProperty(await memoryFuzzTarget(), RUNS);
    },
    60_000 + RUNS * 20,
  );
});
