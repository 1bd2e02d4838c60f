import Database from 'better-sqlite3';
import { afterAll, beforeAll, describe, it } from 'vitest';
import { describeStoreConformance, describeStoreModel, describeStoreSuites } from '../../src/testing/index.js';
import { makeSqliteHarness } from './sqlite-harness.js';

const runner = { describe, it, beforeAll, afterAll };
const open = (path: string) => new Database(path);

describeStoreSuites(runner, 'sqlite (better-sqlite3, manual clock)', makeSqliteHarness(open, 'manual'), {
  modelRuns: 300,
  raceRuns: 500,
  workers: 3,
});
describeStoreSuites(runner, 'sqlite (better-sqlite3, wall clock)', makeSqliteHarness(open, 'wall'), {
  modelRuns: 100,
  raceRuns: 100,
  workers: 3,
});

// NOTE: a connection that returns every INTEGER as a bigint (better-sqlite3 safe integers; node:sqlite's
// readBigInts) must work the same: times and flags are converted, tokens are read as text anyway.
const openSafeIntegers = (path: string) => new Database(path).defaultSafeIntegers(true);
describeStoreConformance(runner, 'sqlite (better-sqlite3, safe integers)', makeSqliteHarness(openSafeIntegers, 'manual'), {
  modelRuns: 50,
  raceRuns: 0,
  workers: 1,
});
describeStoreModel(runner, 'sqlite (better-sqlite3, safe integers)', makeSqliteHarness(openSafeIntegers, 'manual'), {
  modelRuns: 50,
  raceRuns: 0,
  workers: 1,
});
