/**
 * A SQLite database file for adapter-only tests: one or more better-sqlite3 connections to it, a store per
 * connection on a shared manual clock, and a ledger table written under the fence.
 */
import Database from 'better-sqlite3';
import { createLeases } from '../../src/leases.js';
import type { Leases } from '../../src/leases-types.js';
import { createManualClock, type ManualClock } from '../../src/clock.js';
import { createSqliteStore, type SqliteStore, type SqliteStoreOptions } from '../../src/adapters/sqlite/index.js';
import { freshDatabasePath, SQLITE_EPOCH } from './sqlite-harness.js';

export interface SqliteRig {
  readonly path: string;
  readonly clock: ManualClock;
  readonly database: Database.Database;
  readonly store: SqliteStore;
  leasesFor(holder: string, ttlMs?: number): Leases<SqliteStore>;
  /** Another connection to the same file (closed by `close`). */
  connection(): Database.Database;
  ledger(key: string): string[];
  close(): void;
}

/** Opens a fresh database file, migrated, with a ledger table. */
export async function openSqliteRig(options: Omit<SqliteStoreOptions, 'client'> = {}): Promise<SqliteRig> {
  const file = freshDatabasePath('leasefence-sqlite-rig');
  const clock = createManualClock(SQLITE_EPOCH);
  const connections: Database.Database[] = [];
  const connection = (): Database.Database => {
    const database = new Database(file.path);
    connections.push(database);
    return database;
  };
  const database = connection();
  const store = createSqliteStore({ client: database, clock, ...options });
  await store.migrate();
  database.exec('CREATE TABLE ledger (id INTEGER PRIMARY KEY AUTOINCREMENT, key TEXT NOT NULL, entry TEXT NOT NULL)');
  return {
    path: file.path,
    clock,
    database,
    store,
    leasesFor: (holder, ttlMs = 10_000) => createLeases(store, { holder, ttlMs }),
    connection,
    ledger: (key) =>
      (database.prepare('SELECT entry FROM ledger WHERE key = ? ORDER BY id').all(key) as { entry: string }[]).map((row) => row.entry),
    close: () => {
      for (const open of connections) if (open.open) open.close();
      file.remove();
    },
  };
}
