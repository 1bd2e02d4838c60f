/**
 * The record-level conformance specs (key state, holds, removal, submissions) bite: run against a memory store
 * with a record-level bug planted, the specs that cover it fail, and they all pass against the real one.
 */
import { describe, expect, it } from 'vitest';
import { createBrokenMemoryStore, createMemoryHarness, type PlantedBug } from '../../src/testing/index.js';
import { runSpecs } from './run-specs.js';

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
