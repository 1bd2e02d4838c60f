/**
 * One `BEGIN IMMEDIATE` transaction per operation. IMMEDIATE takes SQLite's single write lock at BEGIN
 * (waiting up to the busy timeout), so the read, the decision and the write of an operation happen with no
 * other writer in between, in this process or any other; and the store's now is read after the lock is
 * taken, so the order of the clock readings is the order of the commits (as long as the clock is steady).
 */
import type { SqliteDatabase } from './client.js';
import { classifyFailure } from './failures.js';
import { statementFor } from './statement-cache.js';

/** What `body` may return: the outcome, and whether to commit its writes (`false`: roll them back). */
export interface TransactionResult<O> {
  readonly outcome: O;
  readonly commit: boolean;
}

/**
 * Runs `body` (synchronously) inside `BEGIN IMMEDIATE ... COMMIT`. Anything `body` throws rolls the
 * transaction back and is rethrown (classified when it is a driver error).
 */
export function immediate<O>(database: SqliteDatabase, operation: string, body: () => TransactionResult<O>): O {
  try {
    statementFor(database, 'BEGIN IMMEDIATE').run();
  } catch (error) {
    throw classifyFailure(error, 'before-commit', operation);
  }
  let result: TransactionResult<O>;
  try {
    result = body();
  } catch (error) {
    rollback(database);
    throw classifyFailure(error, 'before-commit', operation);
  }
  if (!result.commit) {
    rollback(database);
    return result.outcome;
  }
  try {
    statementFor(database, 'COMMIT').run();
  } catch (error) {
    rollback(database);
    throw classifyFailure(error, 'commit', operation);
  }
  return result.outcome;
}

/** Rolls back, ignoring "no transaction is active" (SQLite may have rolled back on its own after an error). */
function rollback(database: SqliteDatabase): void {
  try {
    statementFor(database, 'ROLLBACK').run();
  } catch {
    // NOTE: the transaction is already gone (SQLite rolls back by itself after some errors): nothing to undo.
  }
}
