import Database from 'better-sqlite3';
import { describeStoreSuites } from '../conformance/index.js';
import { makeSqliteHarness } from './sqlite-harness.js';

const open = (path: string) => new Database(path);

describeStoreSuites('sqlite (better-sqlite3, manual clock)', makeSqliteHarness(open, 'manual'), { modelRuns: 300, raceRuns: 500, workers: 3 });
describeStoreSuites('sqlite (better-sqlite3, wall clock)', makeSqliteHarness(open, 'wall'), { modelRuns: 100, raceRuns: 100, workers: 3 });
