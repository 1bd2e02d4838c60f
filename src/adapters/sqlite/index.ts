/**
 * `leasefence/sqlite`: leases stored in a SQLite database file, through your own synchronous connection
 * (`better-sqlite3` 12.x on Node 20+, or Node's built-in `node:sqlite` `DatabaseSync` on Node 22+). Each
 * operation is one `BEGIN IMMEDIATE` transaction deciding with the pure transitions of `leasefence`;
 * fenced writes run your (synchronous) statements in that transaction; token gates for your own tables.
 *
 * The durable choice for several processes on ONE machine with no server: the store clock is the host's
 * wall clock, shared by those processes. See `SqliteStoreOptions.clock` and the README for what a clock
 * stepped backwards or forwards does to expiry.
 */
export { clockTokenFloor, createSqliteStore, type SqliteStore, type SqliteStoreOptions, type SqliteWriteContext } from './sqlite-store.js';
export type { SqliteClient, SqliteStatement, SqliteValue } from './client.js';
export type { SqliteTransactionStatements } from './synchronous-callback.js';
export { DEFAULT_BUSY_TIMEOUT_MS, DEFAULT_GATE_TABLE, DEFAULT_LEASE_TABLE, sqliteGateSchemaSql, sqliteLeaseSchemaSql } from './schema.js';
export {
  createSqliteTokenGate,
  type SqliteGateContext,
  type SqliteTokenGate,
  type SqliteTokenGateOptions,
} from './token-gate.js';
