/**
 * Proof that the race suite bites: the race property runs against memory stores with one classic bug
 * planted each (`broken-stores.ts`) and must fail for every one of them with an invariant violation (not a
 * crash). Each bug is searched from a fixed seed: a race run is a function of the seed (fast-check's
 * scheduler, the scenario, the store's manual clock), so the same scenario exposes it on every run.
 */
import fc from 'fast-check';
import { expectSame, expectTrue } from './assertions.js';
import { createBrokenMemoryStore, PLANTED_BUGS, type PlantedBug } from './broken-stores.js';
import { createMemoryHarness } from './memory-harness.js';
import { raceKeepsInvariants, raceScenarioArb } from './race.js';
import type { TestRunner } from './runner.js';

/**
 * The seed each planted bug is searched from, and after how many runs it was first caught from it (a
 * random seed caught every bug too, but only with high probability; the worst seen needed ~2k runs).
 */
export const PLANTED_BUG_SEEDS: Readonly<Record<PlantedBug, number>> = {
  'unfenced-write': -219314783, // caught after 18 runs
  'blind-renew': 461636417, // 2 runs
  'non-atomic-claim': 2045375653, // 1 run
  'check-then-write': -1053892742, // 117 runs
  'lenient-expiry': -2097303328, // 2 runs
};

/** Tuning of the planted-bug checks. */
export interface PlantedBugOptions {
  /**
   * Runs allowed before the race checkers must have caught a bug (a change to the arbitraries may move
   * the catch: the failure then says after how many runs it was, or that it was not).
   * @default 20_000
   */
  readonly maxRuns?: number;
  /** Where each catch is reported ("caught after N run(s) ..."). @default console.info */
  readonly report?: (line: string) => void;
}

/** What the race property reported for one planted bug. */
export interface PlantedBugCatch {
  readonly caught: boolean;
  readonly runs: number;
  readonly shrinks: number;
  /** The error of the shrunk counterexample (the invariants it broke and the history). */
  readonly error: string;
}

/** Runs the race property (3 workers) against a memory store with `bug` planted, from the bug's seed. */
export async function searchPlantedBug(bug: PlantedBug, maxRuns = 20_000): Promise<PlantedBugCatch> {
  const property = fc.asyncProperty(fc.scheduler(), raceScenarioArb(3), async (scheduler, scenario) => {
    const roundTrip = (): Promise<unknown> => scheduler.schedule(Promise.resolve('store:round-trip'));
    const harness = createMemoryHarness((clock) => createBrokenMemoryStore(clock, bug, roundTrip));
    await raceKeepsInvariants(scheduler, scenario, { harness, stores: [harness.store] });
  });
  const details = await fc.check(property, { numRuns: maxRuns, seed: PLANTED_BUG_SEEDS[bug] });
  return { caught: details.failed, runs: details.numRuns, shrinks: details.numShrinks, error: String(details.errorInstance) };
}

/** Registers one test per planted bug: the race suite must catch it with an invariant violation. */
export function describePlantedBugChecks(runner: TestRunner, options: PlantedBugOptions = {}): void {
  const { maxRuns = 20_000, report = console.info } = options;
  runner.describe('planted bugs: the race checkers catch each one', () => {
    for (const bug of PLANTED_BUGS) {
      runner.it(`a store with ${bug} fails the race property with an invariant violation`, async () => {
        const found = await searchPlantedBug(bug, maxRuns);
        expectSame(found.caught, true, `${bug} caught within ${maxRuns} runs`);
        expectTrue(found.error.includes('race invariants violated'), `an invariant violation, not a crash: ${found.error.slice(0, 500)}`);
        report(`${bug}: caught after ${found.runs} run(s), shrunk ${found.shrinks} time(s), seed ${PLANTED_BUG_SEEDS[bug]}`);
      });
    }
  });
}
