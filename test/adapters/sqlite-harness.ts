/**
 * The SQLite store's harness for the shared suites: a fresh database file in a temp directory, each
 * `connect()` a new connection (its own `Database`) to that file, so the race suite runs over several real
 * connections serialised by SQLite's write lock. Two clocks:
 * - `manual`: every connection's store reads one manual clock and mints tokens with no floor, so the model
 *   suite compares exact times and tokens (`previous + 1`), and a nemesis moves time;
 * - `wall`: the default configuration (host wall clock, tokens floored at the clock in microseconds);
 *   `expireNow` rewrites the grant's stored expiry to the wall clock's now, as the Postgres harness does.
 * The ledger is a table written by the fenced write's own statement, in the fenced transaction.
 * Written as a store author writes theirs: it imports only the public entries (`leasefence`,
 * `leasefence/sqlite`, `leasefence/testing`; here their sources), checked by test/testing/third-party.test.ts.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createManualClock, type ManualClock } from '../../src/adapters/memory/index.js';
import { createSqliteStore, type SqliteClient, type SqliteStore, type SqliteStoreOptions } from '../../src/adapters/sqlite/index.js';
import type { StoreHarness } from '../../src/testing/index.js';

/** The clock the manual harness starts at (a realistic epoch, so ISO dates in messages look right). */
export const SQLITE_EPOCH = Date.UTC(2026, 0, 1);

/** A SQLite connection the harness can open and close. */
export type ClosableDatabase = SqliteClient & { close(): unknown };

/** Opens a connection to a database file: better-sqlite3 or node:sqlite. */
export type OpenDatabase = (path: string) => ClosableDatabase;

type DatabaseSyncClass = new (path: string) => ClosableDatabase;

/** `node:sqlite`'s DatabaseSync, or null on a Node without it. */
export function databaseSync(): DatabaseSyncClass | null {
  try {
    // NOTE: through require so that Node 20 (no node:sqlite, no types for it) can load this file.
    return (createRequire(import.meta.url)('node:sqlite') as { DatabaseSync: DatabaseSyncClass }).DatabaseSync;
  } catch {
    return null;
  }
}

export type SqliteClockKind = 'manual' | 'wall';

const LEDGER_TABLE = 'ledger';

/** A temp directory for one harness's database file. */
export function freshDatabasePath(label = 'leasefence-sqlite'): { readonly path: string; remove(): void } {
  const directory = mkdtempSync(join(tmpdir(), `${label}-`));
  return { path: join(directory, 'leases.db'), remove: () => rmSync(directory, { recursive: true, force: true }) };
}

/** Builds a harness factory for one driver and clock. */
export function makeSqliteHarness(
  open: OpenDatabase,
  clockKind: SqliteClockKind,
): () => Promise<StoreHarness<SqliteStore> & { readonly clock: ManualClock | null }> {
  return async () => {
    const file = freshDatabasePath();
    const clock = clockKind === 'manual' ? createManualClock(SQLITE_EPOCH) : null;
    const storeOptions: Omit<SqliteStoreOptions, 'client'> = clock === null ? {} : { clock, tokenFloor: () => 0n };
    const connections: ClosableDatabase[] = [];
    const connectStore = (): SqliteStore => {
      const database = open(file.path);
      connections.push(database);
      return createSqliteStore({ client: database, ...storeOptions });
    };
    const store = connectStore();
    await store.migrate();
    const main = connections[0]!;
    main.exec(`CREATE TABLE ${LEDGER_TABLE} (id INTEGER PRIMARY KEY AUTOINCREMENT, key TEXT NOT NULL, entry TEXT NOT NULL)`);
    let keys = 0;
    return {
      store,
      clock,
      connect: async () => connectStore(),
      // NOTE: the INSERT runs inside the store's BEGIN IMMEDIATE transaction, after the fence check.
      appendUnderFence: (leases, lease, entry) =>
        leases.fencedWrite(lease, (tx) => tx.run(`INSERT INTO ${LEDGER_TABLE} (key, entry) VALUES (?, ?)`, lease.key, entry)),
      // NOTE: a refusal after the INSERT: the store rolls the transaction back, so the entry never lands.
      fencedAppend: (fence, entry, options, refuse) =>
        store.fencedWrite(
          fence,
          (tx) => {
            tx.run(`INSERT INTO ${LEDGER_TABLE} (key, entry) VALUES (?, ?)`, fence.key, entry);
            if (refuse !== undefined) tx.refuse(refuse.code, refuse.detail);
          },
          options,
        ),
      readLedger: async (key) =>
        (main.prepare(`SELECT entry FROM ${LEDGER_TABLE} WHERE key = ? ORDER BY id`).all(key) as { entry: string }[]).map(
          (row) => row.entry,
        ),
      expireNow: async (key) => {
        if (clock !== null) {
          const expiresAt = (await store.inspect(key)).grant?.expiresAt ?? null;
          if (expiresAt !== null && expiresAt > clock()) clock.set(expiresAt);
          return;
        }
        const now = Date.now();
        main.prepare(`UPDATE ${store.table} SET expires_at = ? WHERE key = ? AND holder IS NOT NULL AND expires_at > ?`).run(now, key, now);
      },
      advanceClock: clock === null ? null : (ms) => clock.advance(ms),
      freshKey: (label = 'key') => `${label}:${++keys}`,
      close: async () => {
        for (const connection of connections) connection.close();
        file.remove();
      },
    };
  };
}
