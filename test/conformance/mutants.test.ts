/**
 * Mutation smoke test: the race property runs against memory stores with one classic bug planted each, and
 * must fail for every one of them, with an invariant violation (not a crash). Proof that the checkers bite.
 */
import fc from 'fast-check';
import { describe, expect, test } from 'vitest';
import { createMemoryHarness } from '../adapters/memory-harness.js';
import { createBrokenMemoryStore, PLANTED_BUGS } from './broken-stores.js';
import { raceKeepsInvariants, raceScenarioArb } from './race.js';

/** Runs allowed before the checkers must have caught a planted bug (the worst seed seen needs ~2k). */
const MAX_RUNS = 20_000;

describe('mutation smoke test: the race checkers catch planted bugs', () => {
  for (const bug of PLANTED_BUGS) {
    test(`a store with ${bug} fails the race property with an invariant violation`, async () => {
      const property = fc.asyncProperty(fc.scheduler(), raceScenarioArb(3), async (scheduler, scenario) => {
        const roundTrip = () => scheduler.schedule(Promise.resolve('store:round-trip'));
        const harness = createMemoryHarness((clock) => createBrokenMemoryStore(clock, bug, roundTrip));
        await raceKeepsInvariants(scheduler, scenario, { harness, stores: [harness.store] });
      });
      const details = await fc.check(property, { numRuns: MAX_RUNS });
      expect(details.failed).toBe(true);
      expect(String(details.errorInstance)).toContain('race invariants violated');
      console.info(`${bug}: caught after ${details.numRuns} run(s), shrunk ${details.numShrinks} time(s), seed ${details.seed}`);
    });
  }
});
