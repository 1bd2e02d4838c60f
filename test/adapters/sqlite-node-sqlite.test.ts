/**
 * The same shared suites over Node's built-in `node:sqlite` (`DatabaseSync`, Node 22.5+), where this Node
 * has it; skipped on older Nodes (leasefence supports Node 20, where better-sqlite3 12 is the driver).
 */
import { afterAll, beforeAll, describe, it } from 'vitest';
import { describeStoreSuites } from '../../src/testing/index.js';
import { databaseSync, makeSqliteHarness } from './sqlite-harness.js';

const DatabaseSync = databaseSync();

if (DatabaseSync === null) {
  // NOTE: skipped, not failed, where the runtime has no node:sqlite (Node 20, our CI): the same suites run
  // on better-sqlite3 there; on Node 22+ this file runs them on node:sqlite.
  describe('sqlite (node:sqlite)', () => {
    it.skip(`node:sqlite is not available on Node ${process.version}`, () => undefined);
  });
} else {
  const open = (path: string) => new DatabaseSync(path);
  const runner = { describe, it, beforeAll, afterAll };
  describeStoreSuites(runner, 'sqlite (node:sqlite, manual clock)', makeSqliteHarness(open, 'manual'), {
    modelRuns: 200,
    raceRuns: 300,
    workers: 3,
  });
  describeStoreSuites(runner, 'sqlite (node:sqlite, wall clock)', makeSqliteHarness(open, 'wall'), {
    modelRuns: 50,
    raceRuns: 50,
    workers: 3,
  });
}
