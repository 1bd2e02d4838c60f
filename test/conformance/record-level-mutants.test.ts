/**
 * The record-level conformance specs (key state, holds, removal, submissions) bite: run against a memory store
 * with a record-level bug planted, the specs that cover it fail, and they all pass against the real one.
 */
import { describe, expect, it } from 'vitest';
import {
  createBrokenMemoryStore,
  createMemoryHarness,
  describeStoreConformance,
  type PlantedBug,
  type TestRunner,
} from '../../src/testing/index.js';
import type { MakeStoreHarness } from '../../src/testing/harness.js';
import type { Store } from '../../src/store.js';

/** Collects the suite's specs by name (a runner that registers instead of running), then runs them in order. */
async function runSpecs<S extends Store>(makeHarness: MakeStoreHarness<S>): Promise<Map<string, string | null>> {
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

const failing = (results: Map<string, string | null>): string[] => [...results].filter(([, error]) => error !== null).map(([name]) => name);

describe('the record-level conformance specs catch the record-level planted bugs', () => {
  it('pass, every one, on the memory store', async () => {
    expect(failing(await runSpecs(async () => createMemoryHarness()))).toEqual([]);
  });

  const caught: Record<Extract<PlantedBug, 'ignores-key-state' | 'reissues-after-remove'>, string[]> = {
    'ignores-key-state': [
      'store: Store conformance > key state > needs no lease: sets and removes values, inspect shows them; setting the values it has changes nothing and keeps the grant',
      'store: Store conformance > key state > a changed value ends the live grant: its every operation is refused state-changed naming the value (expected at grant time, found now); the next claim is told',
      'store: Store conformance > key state > a change records an expired grant as expired (its fence then says expired)',
      // NOTE: its state change meant to end the second grant before the third claim.
      'store: Store conformance > remove > after remove every operation of an old grant says missing, and the key claimed again mints tokens above every earlier one',
    ],
    'reissues-after-remove': [
      'store: Store conformance > remove > after remove every operation of an old grant says missing, and the key claimed again mints tokens above every earlier one',
    ],
  };
  for (const [bug, specs] of Object.entries(caught) as Array<[PlantedBug, string[]]>) {
    it(`fail on a store with ${bug}, in exactly the specs that cover it`, async () => {
      const results = await runSpecs(async () =>
        createMemoryHarness((clock) => createBrokenMemoryStore(clock, bug, async () => undefined)),
      );
      expect(failing(results)).toEqual(specs);
      for (const spec of specs) expect(results.get(spec)).toMatch(/does not match|expected/);
    });
  }
});
