/**
 * `leasefence/testing`: the suites that prove leasefence's own stores, for your store. Give them your test
 * runner's `describe` / `it` / `beforeAll` / `afterAll` and a factory of a `StoreHarness` (your store plus a
 * few test hooks); they register the conformance specs, the model-based suite and the `fc.scheduler()` race
 * suite. Needs `fast-check` (an optional peer dependency of leasefence, used by this entry only).
 *
 * ```ts
 * import { afterAll, beforeAll, describe, it } from 'vitest';
 * import { describeStoreSuites } from 'leasefence/testing';
 *
 * describeStoreSuites({ describe, it, beforeAll, afterAll }, 'my store', makeMyHarness, { modelRuns: 100, raceRuns: 100 });
 * ```
 */
import type { Store } from '../store.js';
import { describeStoreConformance } from './conformance.js';
import { assertSuiteArguments, type MakeStoreHarness, type SuiteOptions } from './harness.js';
import { describeStoreModel } from './model.js';
import { describeStoreRaces } from './race.js';
import type { TestRunner } from './runner.js';

export { describeStoreConformance } from './conformance.js';
export { describeStoreModel, MODEL_PROPERTY, modelProperty } from './model.js';
export { describeStoreRaces, raceKeepsInvariants, raceScenarioArb, runRace, RACE_PROPERTY, RACE_TTL_MS, SERVER_RACE_TTL_MS } from './race.js';
export type { NemesisStep, RaceResult, RaceScenario, RaceSetup, RaceStep } from './race.js';
export { assertRaceInvariants } from './race-invariants.js';
export type { ExpireOp, RaceHistory, RaceOp, RaceOpKind, RaceOutcome } from './race-history.js';
export type { ModelEndingKind, ModelGrant, ModelHandle, ModelState } from './model-reference.js';
export type { ModelReal } from './model-commands.js';
export { suiteOptions, type MakeStoreHarness, type StoreHarness, type SuiteOptions } from './harness.js';
export { skipTest, type TestBody, type TestRunner } from './runner.js';
export { mustClaim, SPEC_TTL_MS, textOf } from './context.js';
export { createMemoryHarness, MEMORY_EPOCH, type MemoryLikeStore } from './memory-harness.js';
export { createBrokenMemoryStore, PLANTED_BUGS, type PlantedBug } from './broken-stores.js';
export { describePlantedBugChecks, MODEL_PLANTED_BUG_SEEDS, PLANTED_BUG_SEEDS, searchPlantedBug, type PlantedBugCatch, type PlantedBugOptions, type PlantedBugSuite } from './planted-bugs.js';
export { assertProperty } from './property.js';
export { expectClose, expectEqual, expectExcludes, expectMatch, expectNoProperty, expectRejects, expectSame, expectTrue } from './assertions.js';
export { PROPERTY_SUITE_TIMEOUT_MS } from './timeouts.js';

/** Registers the conformance specs, the model-based suite and the race suite for one store. */
export function describeStoreSuites<S extends Store>(runner: TestRunner, name: string, makeHarness: MakeStoreHarness<S>, options: SuiteOptions = {}): void {
  assertSuiteArguments(runner, name, makeHarness, options);
  describeStoreConformance(runner, name, makeHarness, options);
  describeStoreModel(runner, name, makeHarness, options);
  describeStoreRaces(runner, name, makeHarness, options);
}
