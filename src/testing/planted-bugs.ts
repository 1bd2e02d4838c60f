/**
 * Proof that the suites bite: the race property runs against memory stores with one classic bug planted
 * each (`broken-stores.ts`) and must fail for every one of them with an invariant violation (not a crash);
 * the model-based property must fail for each bug a single caller can hit (all but the two races). The two
 * record-level bugs (key state that does not fence, tokens reissued after a removal) are beyond the race
 * workload and are the model's to catch. Each bug
 * is searched from a fixed seed: a run is a function of the seed (fast-check's scheduler, the scenario or
 * commands, the store's manual clock), so the same counterexample exposes it every time.
 */
import fc from 'fast-check';
import { expectSame, expectTrue } from './assertions.js';
import { createBrokenMemoryStore, PLANTED_BUGS, type PlantedBug } from './broken-stores.js';
import { createMemoryHarness } from './memory-harness.js';
import { modelProperty } from './model.js';
import { raceKeepsInvariants, raceScenarioArb } from './race.js';
import type { TestRunner } from './runner.js';

/**
 * The seed each planted bug is searched from, and after how many runs it was first caught from it (a
 * random seed caught every bug too, but only with high probability; the worst seen needed ~2k runs).
 */
export const PLANTED_BUG_SEEDS: Readonly<Partial<Record<PlantedBug, number>>> = {
  'unfenced-write': -219314783, // caught after 18 runs
  'blind-renew': 461636417, // 2 runs
  'non-atomic-claim': 2045375653, // 1 run
  'check-then-write': -1053892742, // 117 runs
  'lenient-expiry': -2097303328, // 2 runs
};

/**
 * The seed the model-based property searches each sequential planted bug from (two others need concurrent
 * callers), and after how many runs it was first caught from it (random seeds caught each within 1-136 runs).
 */
export const MODEL_PLANTED_BUG_SEEDS: Readonly<Partial<Record<PlantedBug, number>>> = {
  'unfenced-write': 391131948, // caught after 1 run
  'blind-renew': 1438930137, // 2 runs (1 before the model gained acquirePermit, which moved every run's commands)
  'lenient-expiry': 1852543977, // 4 runs (20 before)
  'ignores-key-state': 1159498772, // 2 runs (1 before)
  'reissues-after-remove': 387972783, // 2 runs (1 before)
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

/** The suite whose property searches a planted bug. */
export type PlantedBugSuite = 'race' | 'model';

/**
 * Runs the race property (3 workers) or the model-based property against a memory store with `bug`
 * planted, from the bug's seed for that suite.
 */
export async function searchPlantedBug(bug: PlantedBug, maxRuns = 20_000, suite: PlantedBugSuite = 'race'): Promise<PlantedBugCatch> {
  const details =
    suite === 'race'
      ? await fc.check(
          fc.asyncProperty(fc.scheduler(), raceScenarioArb(3), async (scheduler, scenario) => {
            const roundTrip = (): Promise<unknown> => scheduler.schedule(Promise.resolve('store:round-trip'));
            const harness = createMemoryHarness((clock) => createBrokenMemoryStore(clock, bug, roundTrip));
            await raceKeepsInvariants(scheduler, scenario, { harness, stores: [harness.store] });
          }),
          { numRuns: maxRuns, ...(PLANTED_BUG_SEEDS[bug] === undefined ? {} : { seed: PLANTED_BUG_SEEDS[bug] }) },
        )
      : await fc.check(
          modelProperty(() => createMemoryHarness((clock) => createBrokenMemoryStore(clock, bug, async () => undefined))),
          { numRuns: maxRuns, ...(MODEL_PLANTED_BUG_SEEDS[bug] === undefined ? {} : { seed: MODEL_PLANTED_BUG_SEEDS[bug] }) },
        );
  return { caught: details.failed, runs: details.numRuns, shrinks: details.numShrinks, error: String(details.errorInstance) };
}

/**
 * Registers one test per planted bug: the race suite must catch it with an invariant violation; and one
 * per sequential planted bug: the model-based suite must catch it with an operation answering wrong.
 */
export function describePlantedBugChecks(runner: TestRunner, options: PlantedBugOptions = {}): void {
  const { maxRuns = 20_000, report = console.info } = options;
  runner.describe('planted bugs: the race checkers catch each one', () => {
    // NOTE: the record-level bugs (key state, removal) are out of the race workload's reach: the model catches them.
    for (const bug of PLANTED_BUGS.filter((planted) => PLANTED_BUG_SEEDS[planted] !== undefined)) {
      runner.it(`a store with ${bug} fails the race property with an invariant violation`, async () => {
        const found = await searchPlantedBug(bug, maxRuns, 'race');
        expectSame(found.caught, true, `${bug} caught within ${maxRuns} runs`);
        expectTrue(found.error.includes('race invariants violated'), `an invariant violation, not a crash: ${found.error.slice(0, 500)}`);
        report(`${bug}: caught after ${found.runs} run(s), shrunk ${found.shrinks} time(s), seed ${PLANTED_BUG_SEEDS[bug]}`);
      });
    }
  });
  runner.describe('planted bugs: the model-based suite catches each one a single caller can hit', () => {
    for (const bug of PLANTED_BUGS.filter((planted) => MODEL_PLANTED_BUG_SEEDS[planted] !== undefined)) {
      runner.it(`a store with ${bug} fails the model-based property with an operation answering wrong`, async () => {
        const found = await searchPlantedBug(bug, maxRuns, 'model');
        expectSame(found.caught, true, `${bug} caught within ${maxRuns} runs`);
        expectTrue(
          /answered|after the command/.test(found.error),
          `a wrong answer or store state, not a crash: ${found.error.slice(0, 500)}`,
        );
        report(`${bug} (model): caught after ${found.runs} run(s), shrunk ${found.shrinks} time(s), seed ${MODEL_PLANTED_BUG_SEEDS[bug]}`);
      });
    }
  });
}
