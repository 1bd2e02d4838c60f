/**
 * The example-based Store conformance suite: the Store contract, spec by spec, through `createLeases` (and
 * `createElection`, whose terms are grants), and on the Store itself for the record-level operations (key state,
 * holds, removal, submissions, write refusals, claim-next, semaphores).
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
import { describeKeyStateSpecs } from './specs-key-state.js';
import { describeOperatorSpecs } from './specs-operator.js';
import { describeProgressSpecs } from './specs-progress.js';
import { describeClaimNextSpecs } from './specs-claim-next.js';
import { describePermitSpecs } from './specs-permits.js';
import { describeQueueSpecs } from './specs-queue.js';
import { describeSubmissionSpecs } from './specs-submissions.js';

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
    describeKeyStateSpecs(context);
    describeSubmissionSpecs(context);
    // NOTE: skipped, spec by spec, on a store that offers no sets (claim-next is optional).
    describeClaimNextSpecs(context);
    // NOTE: skipped, spec by spec, on a store that offers no semaphores (acquirePermit is optional).
    describePermitSpecs(context);
    describeQueueSpecs(context);
  });
}
