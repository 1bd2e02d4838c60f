/**
 * The SQLite client, typed structurally: the few members leasefence calls, which both `better-sqlite3`'s
 * `Database` and Node's `node:sqlite` `DatabaseSync` (Node 22+) have. Nothing here imports a driver, so
 * `leasefence/sqlite` loads in a project that has neither installed.
 */

/**
 * A value SQLite binds or returns: both drivers bind these kinds (booleans and `undefined` they refuse). A BLOB
 * is bound as a `Buffer` (better-sqlite3 refuses other `Uint8Array`s; node:sqlite takes either).
 */
export type SqliteValue = string | number | bigint | null | Uint8Array;

/** A prepared statement: `better-sqlite3` `Statement` or `node:sqlite` `StatementSync`. */
export interface SqliteStatement {
  /** Runs the statement for its effect. */
  run(...params: SqliteValue[]): unknown;
  /** The first row, or `undefined` when there is none. */
  get(...params: SqliteValue[]): unknown;
  /** Every row. */
  all(...params: SqliteValue[]): unknown[];
}

/**
 * A synchronous SQLite connection: `new Database(path)` of `better-sqlite3` (12.x runs on Node 20) or
 * `new DatabaseSync(path)` of `node:sqlite` (Node 22+). Give the store a connection of its own or one your
 * code shares, as long as your code does not leave a transaction open on it between two ticks.
 */
export interface SqliteClient {
  /** Compiles one statement (parameters are positional `?`). */
  prepare(sql: string): SqliteStatement;
  /** Runs SQL text with no parameters (transaction control, pragmas, DDL). */
  exec(sql: string): unknown;
}
