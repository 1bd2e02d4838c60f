import Database from 'better-sqlite3';
import { makeSqliteHarness } from '../adapters/sqlite-harness.js';
import { describeListSpecs } from './list-specs.js';

describeListSpecs(
  'SQLite (better-sqlite3)',
  makeSqliteHarness((path) => new Database(path), 'manual'),
  100,
);
