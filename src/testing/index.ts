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
export { describeStoreModel } from './model.js';
export { describeStoreRaces } from './race.js';
export type { MakeStoreHarness, StoreHarness, SuiteOptions } from './harness.js';
export type { TestBody, TestRunner } from './runner.js';
export { createMemoryHarness, type MemoryLikeStore } from './memory-harness.js';
export { createBrokenMemoryStore, PLANTED_BUGS, type BrokenMemoryStore, type PlantedBug } from './broken-stores.js';
export { describePlantedBugChecks, type PlantedBugOptions } from './planted-bugs.js';

/** Registers the conformance specs, the model-based suite and the race suite for one store. */
export function describeStoreSuites<S extends Store>(
  runner: TestRunner,
  name: string,
  makeHarness: MakeStoreHarness<S>,
  options: SuiteOptions = {},
): void {
  assertSuiteArguments(runner, name, makeHarness, options);
  describeStoreConformance(runner, name, makeHarness, options);
  describeStoreModel(runner, name, makeHarness, options);
  describeStoreRaces(runner, name, makeHarness, options);
}
