/**
 * The `leasefence/testing` suites under `node:test` + `node:assert` (no vitest), from the source entry: the
 * memory store's suites, the planted-bug checks, and the conformance specs with the clock not controlled. Run by test/testing/node-test.test.ts as
 * `node --import tsx --test test/testing/suites.node.ts`.
 */
import { after, before, describe, it } from 'node:test';
import {
  createMemoryHarness,
  describePlantedBugChecks,
  describeStoreConformance,
  describeStoreSuites,
  type TestRunner,
} from '../../src/testing/index.js';

const runner: TestRunner = { describe, it, beforeAll: before, afterAll: after };

describeStoreSuites(runner, 'memory under node:test', async () => createMemoryHarness(), { modelRuns: 20, raceRuns: 20, workers: 3 });
describePlantedBugChecks(runner);
// NOTE: a store whose clock the test cannot move: the strict-expiry spec skips itself through node:test's t.skip().
// Its clock moves with real time (a millisecond a millisecond), as a server's does: specs that need two events a
// few milliseconds apart (claim-next's order by availability) wait for it instead of moving it.
describeStoreConformance(runner, 'memory under node:test, clock not controlled', async () => {
  const harness = createMemoryHarness();
  const ticking = setInterval(() => harness.clock.advance(1), 1);
  ticking.unref();
  return {
    ...harness,
    advanceClock: null,
    close: async () => {
      clearInterval(ticking);
      await harness.close();
    },
  };
});
