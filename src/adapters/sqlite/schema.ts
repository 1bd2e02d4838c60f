/**
 * The lease table and the gate table, as DDL text you can run in your own migrations, and the pragmas
 * `migrate()` sets. Tables are `STRICT` (SQLite 3.37+, bundled by both drivers) so a wrong type is an
 * error, not a silent conversion, and `WITHOUT ROWID`, clustered on their text primary key.
 */
import { tableName, type TableName } from './identifier.js';

/** The default lease table. */
export const DEFAULT_LEASE_TABLE = 'leasefence_leases';

/** The default gate table. */
export const DEFAULT_GATE_TABLE = 'leasefence_gates';

/** How long a connection waits for another process's write lock before giving up, by default. */
export const DEFAULT_BUSY_TIMEOUT_MS = 5_000;

/**
 * One row per key, never deleted: `token` is the floor of every later grant. A grant is present iff
 * `holder` is not NULL. Times are epoch milliseconds on the host's clock; `secret_hash` is the SHA-256 of the
 * grant's secret (the secret itself is never stored). Tokens are 64-bit integers.
 */
export function leaseTableSql(table: TableName): string {
  return `CREATE TABLE IF NOT EXISTS ${table.quoted} (
  key TEXT PRIMARY KEY,
  token INTEGER NOT NULL,
  holder TEXT,
  run_id TEXT,
  secret_hash TEXT,
  acquired_at INTEGER,
  expires_at INTEGER,
  attributes TEXT,
  ending_kind TEXT,
  ending_token INTEGER,
  ending_holder TEXT,
  ending_run_id TEXT,
  ending_at INTEGER,
  ending_reason TEXT,
  ending_by TEXT,
  checkpoint_json TEXT,
  checkpoint_token INTEGER,
  checkpoint_written_at INTEGER,
  recovery_required INTEGER NOT NULL DEFAULT 0
) STRICT, WITHOUT ROWID`;
}

/** One row per gated resource: the lease key and the highest token that wrote it. */
export function gateTableSql(table: TableName): string {
  return `CREATE TABLE IF NOT EXISTS ${table.quoted} (
  resource TEXT PRIMARY KEY,
  lease_key TEXT NOT NULL,
  token INTEGER NOT NULL
) STRICT, WITHOUT ROWID`;
}

/**
 * Write-ahead logging: readers never block the writer and the writer never blocks readers, so processes
 * sharing the file only queue behind each other's (short) write transactions. Persistent in the file.
 * NOTE: WAL needs every process on the same host (shared memory); never put the file on a network share.
 */
export const WAL_PRAGMA = 'PRAGMA journal_mode = WAL';

/** Sets the connection's busy timeout (per connection, not persistent). `ms` is a validated integer. */
export function busyTimeoutPragma(ms: number): string {
  return `PRAGMA busy_timeout = ${ms}`;
}

/**
 * The lease table's DDL, for your own migrations (`migrate()` runs it, after `PRAGMA journal_mode = WAL`).
 *
 * ```ts
 * client.exec('PRAGMA journal_mode = WAL');
 * client.exec(sqliteLeaseSchemaSql());
 * ```
 */
export function sqliteLeaseSchemaSql(table: string = DEFAULT_LEASE_TABLE): string {
  return leaseTableSql(tableName(table));
}

/** The gate table's DDL, for your own migrations (the gate's `migrate()` runs it). */
export function sqliteGateSchemaSql(table: string = DEFAULT_GATE_TABLE): string {
  return gateTableSql(tableName(table, 'gate table'));
}
