/**
 * What a store author reads when their store breaks the contract: the model-based and race suites, run on
 * planted-bug stores from fixed seeds, fail with the property they state, fast-check's report (seed, shrunk
 * counterexample) and the error of the shrunk run, which names the broken check or invariant. The suites
 * are registered on a recording runner, so their failures are values this test reads.
 */
import { describe, expect, it } from 'vitest';
import {
  createBrokenMemoryStore,
  createMemoryHarness,
  describeStoreModel,
  describeStoreRaces,
  type PlantedBug,
  type TestBody,
  type TestRunner,
} from '../../src/testing/index.js';
import { RACE_PROPERTY } from '../../src/testing/race.js';
import { MODEL_PROPERTY } from '../../src/testing/model.js';

/** A runner that records what the suites register; `runAll` runs it in order and returns each test's error. */
function recordingRunner(): TestRunner & { runAll(): Promise<Map<string, unknown>> } {
  const before: (() => Promise<void>)[] = [];
  const after: (() => Promise<void>)[] = [];
  const tests: { name: string; body: TestBody }[] = [];
  return {
    describe: (_name, body) => body(),
    it: (name, body) => tests.push({ name, body }),
    beforeAll: (hook) => before.push(hook),
    afterAll: (hook) => after.push(hook),
    async runAll() {
      const errors = new Map<string, unknown>();
      for (const hook of before) await hook();
      try {
        for (const test of tests)
          await test.body().then(
            () => errors.set(test.name, null),
            (error: unknown) => errors.set(test.name, error),
          );
      } finally {
        for (const hook of after) await hook();
      }
      return errors;
    },
  };
}

/** A memory harness on a store with `bug` planted (bugs that need no scheduled round trip). */
const brokenHarness = (bug: PlantedBug) => async () =>
  createMemoryHarness((clock) => createBrokenMemoryStore(clock, bug, async () => undefined));

describe('a failing suite tells the author what broke', () => {
  it('model-based: the property, the seed, the shrunk sequence of operations, and the operation that answered wrong', async () => {
    const runner = recordingRunner();
    describeStoreModel(runner, 'unfenced-write', brokenHarness('unfenced-write'), { modelRuns: 200, seed: 42 });
    const error = (await runner.runAll()).get(MODEL_PROPERTY);
    expect(error).toBeInstanceOf(Error);
    const message = (error as Error).message;
    expect(message.startsWith(`property failed: ${MODEL_PROPERTY}\nProperty failed after `)).toBe(true);
    expect(message).toMatch(/\{ seed: 42, path: "[\d:]+", endOnFailure: true \}/);
    // NOTE: the grant may come from a plain or a waiting claim, the unfenced write from `write` or `submit` (a fenced
    // write with a submission): which one the seed shrinks to depends on the command list.
    expect(message).toMatch(/Counterexample: \[(claim|waitingClaim)\(w\d.*(write|submit)\(w\d#\d/);
    expect(message).toMatch(/Shrunk \d+ time\(s\)/);
    expect(message).toMatch(/Got AssertionError.*(write|submit)\(w\d#\d.*\) answered does not match: \.ok: expected false, found true/);
  });

  it('race: the property, the seed, the shrunk schedule, and each violation under the invariant it breaks', async () => {
    const runner = recordingRunner();
    describeStoreRaces(runner, 'lenient-expiry', brokenHarness('lenient-expiry'), { raceRuns: 500, workers: 3, seed: 42 });
    const error = (await runner.runAll()).get(RACE_PROPERTY);
    expect(error).toBeInstanceOf(Error);
    const message = (error as Error).message;
    expect(message.startsWith(`property failed: ${RACE_PROPERTY}\nProperty failed after `)).toBe(true);
    expect(message).toMatch(/\{ seed: 42, path: "[\d:]+", endOnFailure: true \}/);
    expect(message).toMatch(/Counterexample: \[schedulerFor\(\)/);
    expect(message).toMatch(/Shrunk \d+ time\(s\)/);
    expect(message).toMatch(
      /race invariants violated:\n {2}\[invariants 3 and 5: only the current grant renews, writes, checkpoints and releases\] w\d write t\d+ .* accepted at \d+, at or after the grant expired at \d+/,
    );
    expect(message).toMatch(/history:\n/);
  });
});
