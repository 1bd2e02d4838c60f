/**
 * Fenced writes and gate writes run the user's callback INSIDE the operation's `BEGIN IMMEDIATE`
 * transaction, on a synchronous driver. The callback must therefore be synchronous: a callback that awaited
 * would leave the transaction open across ticks on a connection other code shares (their statements would
 * join it, their BEGIN would fail) and while holding the file's only write lock; and whatever it ran after
 * its first `await` would run after the transaction ended, unfenced. So leasefence refuses an `async`
 * function before any I/O, and a callback that returns a promise anyway is rolled back, with nothing
 * committed, and refused with an `InvalidArgumentError`.
 */
import { InvalidArgumentError } from '../../store-entry.js';
import type { SqliteClient, SqliteValue } from './client.js';
import { statementFor } from './statement-cache.js';

const ASYNC_FUNCTION = 'AsyncFunction';

/** Refuses an `async function` / `async () =>` callback before any I/O. */
export function refuseAsyncCallback(write: unknown, what: string): void {
  if (typeof write !== 'function') throw new InvalidArgumentError(`${what} needs a write callback, got ${typeof write}`);
  if (write.constructor?.name === ASYNC_FUNCTION) {
    throw new InvalidArgumentError(
      `${what}: leasefence/sqlite runs the callback inside a SQLite transaction and needs it synchronous, got an async function`,
    );
  }
}

/** Refuses a callback's promise result (thrown inside the transaction, so it rolls back). */
export function refuseThenable(value: unknown, what: string): void {
  if (
    (typeof value === 'object' || typeof value === 'function') &&
    value !== null &&
    typeof (value as PromiseLike<unknown>).then === 'function'
  ) {
    // NOTE: the promise is the caller's; its rejection, if any, would be unhandled: the thrown error reports the misuse.
    (value as PromiseLike<unknown>).then(undefined, () => undefined);
    throw new InvalidArgumentError(
      `${what}: the callback returned a promise; leasefence/sqlite needs it synchronous, and rolled its statements back`,
    );
  }
}

/** Statements bound to the open transaction; they throw once the callback has returned. */
export interface SqliteTransactionStatements {
  /**
   * The connection itself, for the driver's own API (use it only synchronously, inside the callback:
   * after the callback returns, its statements no longer run inside the fenced transaction).
   */
  readonly client: SqliteClient;
  /** Runs a statement (positional `?` parameters) inside the transaction. */
  run(sql: string, ...params: SqliteValue[]): unknown;
  /** The first row of a query run inside the transaction (`undefined`: none). */
  get<Row = Record<string, unknown>>(sql: string, ...params: SqliteValue[]): Row | undefined;
  /** Every row of a query run inside the transaction. */
  all<Row = Record<string, unknown>>(sql: string, ...params: SqliteValue[]): Row[];
}

/** Statements bound to the open transaction, and `close()` to end their validity when the callback returns. */
export function transactionStatements(
  client: SqliteClient,
  what: string,
): { readonly statements: SqliteTransactionStatements; close(): void } {
  let open = true;
  const prepare = (sql: string) => {
    if (!open)
      throw new InvalidArgumentError(`${what}: a statement ran after the callback returned, outside the transaction; it was not run`);
    return statementFor(client, sql);
  };
  const statements: SqliteTransactionStatements = {
    client,
    run: (sql, ...params) => prepare(sql).run(...params),
    get: <Row>(sql: string, ...params: SqliteValue[]) => prepare(sql).get(...params) as Row | undefined,
    all: <Row>(sql: string, ...params: SqliteValue[]) => prepare(sql).all(...params) as Row[],
  };
  return {
    statements,
    close: () => {
      open = false;
    },
  };
}
