/**
 * The fuzz property (issue 9) on the memory store: I/O is counted by a spy around the store. Runs
 * `FUZZ_RUNS` cases (default 3,000).
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { createMemoryStore, createMemoryTokenGate } from '../../src/adapters/memory/index.js';
import { createLeases } from '../../src/leases.js';
import { spyOn } from '../leases/spy-store.js';
import { calls, runCall, type FuzzTarget } from './fuzz-property.js';

const RUNS = Number(process.env['FUZZ_RUNS'] ?? 3_000);

describe('fuzz: every public method on the memory store', () => {
  it(`either INVALID_ARGUMENT before any I/O with every lease unchanged, or a normal result (${RUNS} runs)`, async () => {
    const memory = createMemoryStore();
    const spy = spyOn(memory);
    let keys = 0;
    const foreign = await createLeases(createMemoryStore(), { holder: 'elsewhere' }).claimOrThrow('job:foreign');
    const target: FuzzTarget = {
      leases: createLeases(spy.store, { holder: 'fuzz' }),
      setup: createLeases(memory, { holder: 'setup' }),
      foreign,
      gate: createMemoryTokenGate({ store: spy.store }),
      ioDuring: async (run) => {
        const before = spy.calls.length;
        await run();
        return spy.calls.length - before;
      },
      freshKey: () => `fuzz:${++keys}`,
      checkpointWithWrite: true,
    };
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
