/** The claim-next conformance specs (src/testing/specs-claim-next.ts) on the memory store. */
import { createMemoryHarness } from '../../src/testing/memory-harness.js';
import { describeClaimNextConformance } from '../../src/testing/specs-claim-next.js';
import { vitestRunner } from '../conformance/vitest-runner.js';

describeClaimNextConformance(vitestRunner, 'memory', async () => createMemoryHarness());
