/**
 * One `BEGIN IMMEDIATE` transaction per operation. IMMEDIATE takes SQLite's single write lock at BEGIN
 * (waiting up to the busy timeout), so the read, the decision and the write of an operation happen with no
 * other writer in between, in this process or any other; and the store's now is read after the lock is
 * taken, so the order of the clock readings is the order of the commits (as long as the clock is steady).
 */
import type { SqliteClient } from './client.js';
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
export function immediate<O>(client: SqliteClient, operation: string, body: () => TransactionResult<O>): O {
  try {
    statementFor(client, 'BEGIN IMMEDIATE').run();
  } catch (error) {
    throw classifyFailure(error, 'before-commit', operation);
  }
  let result: TransactionResult<O>;
  try {
    result = body();
  } catch (error) {
    rollback(client);
    throw classifyFailure(error, 'before-commit', operation);
  }
  if (!result.commit) {
    rollback(client);
    return result.outcome;
  }
  try {
    statementFor(client, 'COMMIT').run();
  } catch (error) {
    rollback(client);
    throw classifyFailure(error, 'commit', operation);
  }
  return result.outcome;
}

/** Rolls back, ignoring "no transaction is active" (SQLite may have rolled back on its own after an error). */
function rollback(client: SqliteClient): void {
  try {
    statementFor(client, 'ROLLBACK').run();
  } catch {
    // NOTE: the transaction is already gone (SQLite rolls back by itself after some errors): nothing to undo.
  }
}
