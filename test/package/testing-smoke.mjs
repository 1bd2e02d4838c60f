// `leasefence/testing` as a store author uses it, run by `node --test` from the temp project that holds the
// INSTALLED package (see scripts/package-checks.ts, which links the repo's fast-check in as the peer
// dependency): the suites from the built entry, under node:test + node:assert, against the built memory
// store; the planted-bug checks; and the entry loaded through require (CommonJS) too.
import assert from 'node:assert/strict';
import { createRequire } from 'node:module';
import { after, before, describe, it } from 'node:test';
import { createMemoryStore } from 'leasefence/memory';
import * as testing from 'leasefence/testing';

const require = createRequire(import.meta.url);
const runner = { describe, it, beforeAll: before, afterAll: after };

describe('leasefence/testing, installed', () => {
  it('loads through require (CommonJS) with the same exports as through import', () => {
    const cjs = require('leasefence/testing');
    assert.match(require.resolve('leasefence/testing'), /testing\.cjs$/);
    assert.deepEqual(Object.keys(cjs).sort(), Object.keys(testing).sort());
    for (const name of ['describeStoreSuites', 'describePlantedBugChecks', 'createMemoryHarness', 'createBrokenMemoryStore'])
      assert.equal(typeof cjs[name], 'function', name);
  });
});

// NOTE: the built memory store through a harness of the author's own making: the built createMemoryHarness
// takes a store factory on its manual clock.
testing.describeStoreSuites(
  runner,
  'installed memory store',
  async () => testing.createMemoryHarness((clock) => createMemoryStore({ clock })),
  { modelRuns: 25, raceRuns: 25, workers: 3 },
);
testing.describePlantedBugChecks(runner, { report: () => undefined });
