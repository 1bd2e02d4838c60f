/**
 * The shared suites every adapter runs. An adapter's test file is one call:
 *
 * ```ts
 * describeStoreSuites('postgres (pg)', makePgHarness, { modelRuns: 30, raceRuns: 50, workers: 3 });
 * ```
 */
import type { Store } from '../../src/store.js';
import { describeStoreModel } from '../model/suite.js';
import { describeStoreConformance } from './conformance.js';
import type { MakeStoreHarness, SuiteOptions } from './harness.js';
import { describeStoreRaces } from './race.js';

export { describeStoreConformance } from './conformance.js';
export { describeStoreModel } from '../model/suite.js';
export { describeStoreRaces } from './race.js';
export type { MakeStoreHarness, StoreHarness, SuiteOptions } from './harness.js';

/** Registers the conformance specs, the model-based suite and the race suite for one adapter. */
export function describeStoreSuites<S extends Store>(name: string, makeHarness: MakeStoreHarness<S>, options: SuiteOptions): void {
  describeStoreConformance(name, makeHarness, options);
  describeStoreModel(name, makeHarness, options);
  describeStoreRaces(name, makeHarness, options);
}
