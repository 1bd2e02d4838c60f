/**
 * The claim-next conformance specs (src/testing/specs-claim-next.ts) on the SQLite store: better-sqlite3 with the
 * manual clock, the wall clock and safe integers, and node:sqlite where this Node has it. Registered here, next to the SQLite
 * suites, until the shared conformance runs them on every store.
 */
import Database from 'better-sqlite3';
import { describeClaimNextConformance } from '../../src/testing/specs-claim-next.js';
import { vitestRunner } from '../conformance/vitest-runner.js';
import { databaseSync, makeSqliteHarness } from './sqlite-harness.js';

const open = (path: string) => new Database(path);
describeClaimNextConformance(vitestRunner, 'sqlite (better-sqlite3, manual clock)', makeSqliteHarness(open, 'manual'));
describeClaimNextConformance(vitestRunner, 'sqlite (better-sqlite3, wall clock)', makeSqliteHarness(open, 'wall'));
// NOTE: a connection that returns every INTEGER as a bigint: due times and available_at are converted too.
const openSafeIntegers = (path: string) => new Database(path).defaultSafeIntegers(true);
describeClaimNextConformance(vitestRunner, 'sqlite (better-sqlite3, safe integers)', makeSqliteHarness(openSafeIntegers, 'manual'));

const DatabaseSync = databaseSync();
if (DatabaseSync !== null) {
  const openSync = (path: string) => new DatabaseSync(path);
  describeClaimNextConformance(vitestRunner, 'sqlite (node:sqlite, manual clock)', makeSqliteHarness(openSync, 'manual'));
}
