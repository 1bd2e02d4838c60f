/**
 * Runs the conformance specs on a harness outside the test runner (a runner that registers instead of running),
 * so a test reads which specs fail, and why, on a store with a planted bug.
 */
import type { Store } from '../../src/store.js';
import type { MakeStoreHarness } from '../../src/testing/harness.js';
import { describeStoreConformance, type TestRunner } from '../../src/testing/index.js';

/** Collects the suite's specs by name (a runner that registers instead of running), then runs them in order. */
export async function runSpecs<S extends Store>(makeHarness: MakeStoreHarness<S>): Promise<Map<string, string | null>> {
  const specs: Array<{ name: string; body: () => Promise<void> }> = [];
  const before: Array<() => Promise<void>> = [];
  const after: Array<() => Promise<void>> = [];
  const path: string[] = [];
  const runner: TestRunner = {
    describe: (name, body) => {
      path.push(name);
      body();
      path.pop();
    },
    it: (name, body) => void specs.push({ name: [...path, name].join(' > '), body: () => body() }),
    beforeAll: (hook) => void before.push(hook),
    afterAll: (hook) => void after.push(hook),
  };
  describeStoreConformance(runner, 'store', makeHarness);
  const results = new Map<string, string | null>();
  for (const hook of before) await hook();
  try {
    for (const spec of specs) {
      try {
        await spec.body();
        results.set(spec.name, null);
      } catch (error) {
        results.set(spec.name, error instanceof Error ? error.message : String(error));
      }
    }
  } finally {
    for (const hook of after) await hook();
  }
  return results;
}
