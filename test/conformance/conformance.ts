/**
 * The example-based Store conformance suite, run by every adapter's test file through `createLeases`:
 *
 * ```ts
 * describeStoreConformance('memory', makeMemoryHarness, { modelRuns: 500, raceRuns: 2000, workers: 3 });
 * ```
 */
import { describe } from 'vitest';
import type { Store } from '../../src/store.js';
import { useHarness } from './context.js';
import type { MakeStoreHarness, SuiteOptions } from './harness.js';
import { describeHolderSpecs } from './specs-holder.js';
import { describeOperatorSpecs } from './specs-operator.js';
import { describeProgressSpecs } from './specs-progress.js';

/** Registers the Store contract's example-based specs for one adapter. */
export function describeStoreConformance<S extends Store>(name: string, makeHarness: MakeStoreHarness<S>, _options: SuiteOptions): void {
  describe(`${name}: Store conformance`, () => {
    const context = useHarness(makeHarness);
    describeHolderSpecs(context);
    describeOperatorSpecs(context);
    describeProgressSpecs(context);
  });
}
