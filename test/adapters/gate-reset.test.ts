/**
 * The token gate reset's expectation (gate-reset-specs.ts) on the in-process stores: the memory gate, and the
 * SQLite gate on better-sqlite3 and (where this Node has it) node:sqlite. Postgres runs them per client in
 * postgres-gate-specs.ts, Redis per client in redis-specs.ts.
 */
import { createRequire } from 'node:module';
import Database from 'better-sqlite3';
import { afterAll, beforeAll, describe } from 'vitest';
import { createMemoryTokenGate } from '../../src/adapters/memory/index.js';
import { createSqliteTokenGate, type SqliteClient, type SqliteTokenGate } from '../../src/adapters/sqlite/index.js';
import type { Fence } from '../../src/fence/types.js';
import { describeGateResetSpecs } from './gate-reset-specs.js';
import { freshDatabasePath } from './sqlite-harness.js';

/** A token-only handle: what a gate without a lease store checks. */
const handle = (key: string, token: bigint): Fence => ({ key, token }) as Fence;

describe('memory gate', () => {
  const gate = createMemoryTokenGate();
  describeGateResetSpecs(
    () => ({ gate, write: async (resource, key, token) => (await gate.write(resource, handle(key, token), () => undefined)).ok }),
    { raceRuns: 200 },
  );
});

type Closable = SqliteClient & { close(): unknown };

/** `node:sqlite`'s DatabaseSync, or null on a Node without it (through require, so Node 20 loads this file). */
function databaseSync(): (new (path: string) => Closable) | null {
  try {
    return (createRequire(import.meta.url)('node:sqlite') as { DatabaseSync: new (path: string) => Closable }).DatabaseSync;
  } catch {
    return null;
  }
}

const drivers: Array<[string, (path: string) => Closable]> = [['better-sqlite3', (path) => new Database(path)]];
const DatabaseSync = databaseSync();
if (DatabaseSync !== null) drivers.push(['node:sqlite', (path) => new DatabaseSync(path)]);

describe.each(drivers)('sqlite gate (%s)', (_name, open) => {
  const file = freshDatabasePath('leasefence-gate-reset');
  let database: Closable;
  let gate: SqliteTokenGate;
  beforeAll(async () => {
    database = open(file.path);
    gate = createSqliteTokenGate({ client: database });
    await gate.migrate();
  });
  afterAll(() => {
    database?.close();
    file.remove();
  });
  describeGateResetSpecs(
    () => ({ gate, write: async (resource, key, token) => (await gate.write(resource, handle(key, token), () => undefined)).ok }),
    { raceRuns: 100 },
  );
});
