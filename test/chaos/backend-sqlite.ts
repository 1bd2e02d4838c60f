/**
 * The SQLite adapter as a chaos backend: every worker process opens the same WAL database file with
 * better-sqlite3 (the file's path is the run's "URL"), as several cron jobs on one VM would. The ledger is a
 * row inserted inside the fenced write's `BEGIN IMMEDIATE` transaction, the gated resource a row inserted
 * inside the gate's. `dieInNextWrite` makes the worker SIGKILL itself inside its next fenced write, while it
 * holds the file's only write lock with an uncommitted row.
 */
import Database from 'better-sqlite3';
import { createSqliteStore, createSqliteTokenGate, type SqliteWriteContext } from '../../src/adapters/sqlite/index.js';
import type { Lease } from '../../src/lease.js';
import { createLeases } from '../../src/leases.js';
import type { Leases } from '../../src/leases-types.js';
import type { Store } from '../../src/store.js';
import { finalKeyState, resourceOf, type StoreAdmin, type WorkerBackend } from './backend.js';

/** The lease table every chaos run uses (the adapter's default). */
export const SQLITE_LEASE_TABLE = 'leasefence_leases';

/** The chaos ledgers: one row per applied write, in commit order of `id`. */
const LEDGER_DDL = [
  `CREATE TABLE IF NOT EXISTS chaos_ledger (id INTEGER PRIMARY KEY AUTOINCREMENT, key TEXT NOT NULL, entry TEXT NOT NULL)`,
  `CREATE TABLE IF NOT EXISTS chaos_gate_ledger (id INTEGER PRIMARY KEY AUTOINCREMENT, resource TEXT NOT NULL, entry TEXT NOT NULL)`,
  `CREATE INDEX IF NOT EXISTS chaos_ledger_key ON chaos_ledger (key, id)`,
  `CREATE INDEX IF NOT EXISTS chaos_gate_ledger_resource ON chaos_gate_ledger (resource, id)`,
];

/** How long a worker waits for another process's write lock: bounded, so a stuck holder surfaces as an error. */
const BUSY_TIMEOUT_MS = 2000;

/** A connection to the run's database file. */
export function openSqlite(path: string): Database.Database {
  return new Database(path, { timeout: BUSY_TIMEOUT_MS });
}

type SqliteLeaseStore = ReturnType<typeof createSqliteStore>;

/** Builds the worker's backend; `wrap` swaps in a planted bug (mutants.ts). */
export function createSqliteBackend(
  path: string,
  wrap: (store: SqliteLeaseStore, database: Database.Database) => Store<SqliteWriteContext> = (s) => s,
): WorkerBackend {
  const database = openSqlite(path);
  const real = createSqliteStore({ client: database, busyTimeoutMs: BUSY_TIMEOUT_MS });
  const store = wrap(real, database);
  const gate = createSqliteTokenGate({ store: real });
  let onDying: ((entry: string) => void) | null = null;
  return {
    store: store as Store,
    gate: gate as unknown as WorkerBackend['gate'],
    appendUnderFence: (leases: Leases, lease: Lease, entry: string) =>
      leases.fencedWrite(lease, (tx) => {
        (tx as SqliteWriteContext).run('INSERT INTO chaos_ledger (key, entry) VALUES (?, ?)', lease.key, entry);
        // NOTE: inside BEGIN IMMEDIATE, after the insert: the process dies holding the write lock, uncommitted.
        if (onDying !== null) {
          onDying(entry);
          process.kill(process.pid, 'SIGKILL');
        }
      }),
    appendThroughGate: (leases: Leases, lease: Lease, resource: string, entry: string) =>
      leases.gateWrite(gate as unknown as WorkerBackend['gate'], resource, lease, (tx) => {
        (tx as unknown as SqliteWriteContext).run('INSERT INTO chaos_gate_ledger (resource, entry) VALUES (?, ?)', resource, entry);
      }),
    dieInNextWrite: (callback) => {
      onDying = callback;
    },
    close: async () => {
      database.close();
    },
  };
}

/** The harness's admin connection: creates the tables, forces expiries, revokes, reads the end state. */
export async function createSqliteAdmin(path: string): Promise<StoreAdmin> {
  const database = openSqlite(path);
  const store = createSqliteStore({ client: database, busyTimeoutMs: 10_000 });
  await store.migrate();
  await createSqliteTokenGate({ store }).migrate();
  for (const statement of LEDGER_DDL) database.exec(statement);
  const operator = createLeases(store, { holder: 'chaos-operator' });
  const expireNow = database.prepare(
    `UPDATE ${SQLITE_LEASE_TABLE} SET expires_at = ? WHERE key = ? AND holder IS NOT NULL AND (expires_at IS NULL OR expires_at > ?)`,
  );
  const ledger = database.prepare('SELECT entry FROM chaos_ledger WHERE key = ? ORDER BY id');
  const gated = database.prepare('SELECT entry FROM chaos_gate_ledger WHERE resource = ? ORDER BY id');
  return {
    forceExpire: async (key) => {
      // NOTE: the store's clock is the host's wall clock; one UPDATE is atomic under SQLite's write lock.
      const now = Date.now();
      expireNow.run(now, key, now);
    },
    killConnections: async () => 0,
    revoke: async (key) => (await operator.revoke(key, { reason: 'chaos: operator revoke', by: 'chaos-operator' })).ok,
    readFinal: async (keys) =>
      Promise.all(
        keys.map(async (key) => {
          const entries = (rows: unknown[]): string[] => (rows as Array<{ entry: string }>).map((row) => row.entry);
          return finalKeyState(key, await store.inspect(key), entries(ledger.all(key)), entries(gated.all(resourceOf(key))));
        }),
      ),
    close: async () => {
      database.close();
    },
  };
}
