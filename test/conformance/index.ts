/**
 * The shared suites under their old names (before `leasefence/testing`), bound to vitest, so that a test file
 * that calls `describeStoreSuites(name, makeHarness, options)` from here still compiles and runs:
 *
 * ```ts
 * describeStoreSuites('postgres (pg)', makePgHarness, { modelRuns: 30, raceRuns: 50, workers: 3 });
 * ```
 * New test files call `src/testing/index.ts` with a runner instead.
 */
import * as testing from '../../src/testing/index.js';
import type { MakeStoreHarness, SuiteOptions } from '../../src/testing/index.js';
import type { Store } from '../../src/store.js';
import { vitestRunner } from './vitest-runner.js';

export type { MakeStoreHarness, StoreHarness, SuiteOptions } from '../../src/testing/index.js';

/** `testing.describeStoreSuites` under vitest. */
export function describeStoreSuites<S extends Store>(name: string, makeHarness: MakeStoreHarness<S>, options: SuiteOptions): void {
  testing.describeStoreSuites(vitestRunner, name, makeHarness, options);
}

/** `testing.describeStoreConformance` under vitest. */
export function describeStoreConformance<S extends Store>(name: string, makeHarness: MakeStoreHarness<S>, options: SuiteOptions): void {
  testing.describeStoreConformance(vitestRunner, name, makeHarness, options);
}

/** `testing.describeStoreModel` under vitest. */
export function describeStoreModel<S extends Store>(name: string, makeHarness: MakeStoreHarness<S>, options: SuiteOptions): void {
  testing.describeStoreModel(vitestRunner, name, makeHarness, options);
}

/** `testing.describeStoreRaces` under vitest. */
export function describeStoreRaces<S extends Store>(name: string, makeHarness: MakeStoreHarness<S>, options: SuiteOptions): void {
  testing.describeStoreRaces(vitestRunner, name, makeHarness, options);
}
