/**
 * Proof that the semaphore checks bite (issue 25): a memory store with a classic semaphore bug planted
 * (`src/testing/broken-permits.ts`) fails the semaphore race (its checks from race-checks.ts, not a crash), from a
 * fixed seed; the bug a single caller hits (tokens minted per key) also fails the conformance specs that cover it and
 * the semaphore model, and the bug that needs two callers at once (count, then grant) passes both: only the race sees it.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { createManualClock } from '../../src/clock.js';
import { createBrokenPermitStore, type PlantedPermitBug } from '../../src/testing/broken-permits.js';
import { createMemoryHarness } from '../../src/testing/index.js';
import { permitModelProperty } from '../../src/testing/model-permits.js';
import { runSpecs } from '../conformance/run-specs.js';
import { mutantRepeats } from '../support/repeats.js';
import { raceScenarioArb, runPermitRace } from './memory-race-run.js';
import { expectAtMostLive, expectTokensRise } from './race-checks.js';

/** The seed each bug is searched from, and after how many runs it was first caught from it. */
const SEEDS: Record<PlantedPermitBug, number> = {
  'count-then-grant': 23431507, // caught after 2 runs (random seeds: 1-2 runs)
  'per-key-tokens': 1814054639, // 1 run (random seeds: 1 run)
};
const MAX_RUNS = 2_000;
/** The seed the semaphore model searches per-key-tokens from (caught after 1 run; seed 42: 2 runs). */
const MODEL_SEED = 7;

/** The conformance specs that must fail on a store minting permit tokens per key. */
const SPECS_PER_KEY = [
  'store: Store conformance > semaphores > grants up to the limit, never-used permits lowest index first, then answers full with the live holders and the first expiry',
  'store: Store conformance > semaphores > tokens rise across all permits and on each permit key, over releases and revokes',
];

/** The semaphore race (limit 3, 6 acquirers) against a store with `bug`, from the bug's seed. */
async function searchRace(bug: PlantedPermitBug, seed: number) {
  return fc.check(
    fc.asyncProperty(fc.scheduler(), raceScenarioArb(3, 6), async (s, scenario) => {
      const clock = createManualClock(1_000_000);
      const store = createBrokenPermitStore(clock, bug, () => s.schedule(Promise.resolve('store:round-trip')));
      const grants = await runPermitRace(s, store, clock, scenario);
      expectAtMostLive(grants, scenario.limit);
      expectTokensRise(grants);
    }),
    { numRuns: MAX_RUNS, seed },
  );
}

describe('planted semaphore bugs: the race checks catch each one', () => {
  for (const [bug, seed] of Object.entries(SEEDS) as [PlantedPermitBug, number][]) {
    it(`a store with ${bug} fails the semaphore race with a check's violation`, { repeats: mutantRepeats() }, async () => {
      const found = await searchRace(bug, seed);
      expect(found.failed, `${bug} caught within ${MAX_RUNS} runs`).toBe(true);
      // NOTE: a check's violation (at most limit live; distinct, rising tokens), not a crash.
      expect(String(found.errorInstance)).toMatch(/permits live at|its own token|below .* granted at|began at/);
      console.info(`${bug}: caught after ${found.numRuns} run(s), shrunk ${found.numShrinks} time(s), seed ${seed}`);
    });
  }
});

const brokenHarness = (bug: PlantedPermitBug) => () =>
  createMemoryHarness((clock) => createBrokenPermitStore(clock, bug, async () => undefined));
const failing = (results: Map<string, string | null>): string[] => [...results].filter(([, error]) => error !== null).map(([name]) => name);

describe('planted semaphore bugs: the conformance specs', () => {
  it('fail on a store that mints permit tokens per key, in the specs that compare tokens across permits', async () => {
    const results = await runSpecs(async () => brokenHarness('per-key-tokens')());
    expect(failing(results)).toEqual(SPECS_PER_KEY);
    for (const spec of SPECS_PER_KEY) expect(results.get(spec)).toMatch(/token/);
  });

  it('pass on a store that counts then grants: a single caller never sees that bug (the race does)', async () => {
    expect(failing(await runSpecs(async () => brokenHarness('count-then-grant')()))).toEqual([]);
  });
});

describe('planted semaphore bugs: the semaphore model', () => {
  it('fails on a store that mints permit tokens per key, with a step answering other than the core', async () => {
    const found = await fc.check(permitModelProperty(brokenHarness('per-key-tokens')), { numRuns: MAX_RUNS, seed: MODEL_SEED });
    expect(found.failed).toBe(true);
    expect(String(found.errorInstance)).toMatch(/answered \(expected: the core's answer\) does not match: \.token/);
    console.info(
      `per-key-tokens (semaphore model): caught after ${found.numRuns} run(s), shrunk ${found.numShrinks} time(s), seed ${MODEL_SEED}`,
    );
  });

  it('passes on a store that counts then grants (one caller at a time) and on the memory store', async () => {
    for (const harness of [brokenHarness('count-then-grant'), () => createMemoryHarness()]) {
      const opened = harness();
      const found = await fc.check(
        permitModelProperty(() => opened),
        { numRuns: 200, seed: MODEL_SEED },
      );
      expect(found.failed, String(found.errorInstance)).toBe(false);
    }
  });
});
