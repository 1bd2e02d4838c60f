/**
 * The example-based Store conformance suite: the Store contract, spec by spec, through `createLeases` (and
 * `createElection`, whose terms are grants).
 *
 * ```ts
 * describeStoreConformance({ describe, it, beforeAll, afterAll }, 'my store', makeHarness);
 * ```
 */
import type { Store } from '../store.js';
import { useHarness } from './context.js';
import type { MakeStoreHarness, SuiteOptions } from './harness.js';
import type { TestRunner } from './runner.js';
import { describeElectionSpecs } from './specs-election.js';
import { describeHolderSpecs } from './specs-holder.js';
import { describeOperatorSpecs } from './specs-operator.js';
import { describeProgressSpecs } from './specs-progress.js';

/** Registers the Store contract's example-based specs for one store (`options` is not read: no run counts). */
export function describeStoreConformance<S extends Store>(
  runner: TestRunner,
  name: string,
  makeHarness: MakeStoreHarness<S>,
  _options: SuiteOptions = {},
): void {
  runner.describe(`${name}: Store conformance`, () => {
    const context = useHarness(runner, makeHarness);
    describeHolderSpecs(context);
    describeOperatorSpecs(context);
    describeProgressSpecs(context);
    describeElectionSpecs(context);
  });
}
