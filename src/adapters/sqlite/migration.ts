/**
 * `migrate()` of the store and the gate: WAL mode, then the table's DDL, each retried while another
 * connection holds the lock it needs, for up to the connection's busy timeout.
 *
 * NOTE: several processes migrating a new file at once (cron jobs starting together on a new deployment)
 * get SQLITE_BUSY from `PRAGMA journal_mode = WAL` at once, without the busy timeout being waited: changing
 * the journal mode needs the exclusive lock, and SQLite returns SQLITE_BUSY instead of calling the busy
 * handler where waiting could deadlock (documented at `sqlite3_busy_handler`). Both statements are
 * idempotent and atomic (WAL mode persists in the file; `CREATE TABLE IF NOT EXISTS`), so a retry is safe.
 */
import type { SqliteClient } from './client.js';
import { classifyFailure, isLockFailure } from './failures.js';

/** The longest pause between two attempts, in ms. */
const MAX_PAUSE_MS = 50;

/** The connection's busy timeout in ms (`PRAGMA busy_timeout`: the store's `busyTimeoutMs`, or the driver's). */
function busyTimeoutOf(client: SqliteClient): number {
  const row = client.prepare('PRAGMA busy_timeout').get();
  const value = row === null || typeof row !== 'object' ? undefined : Object.values(row)[0];
  return typeof value === 'number' && Number.isFinite(value) && value > 0 ? value : 0;
}

/**
 * Runs each of `statements` in order, retrying one that fails on a lock (SQLITE_BUSY, SQLITE_LOCKED) after a
 * pause (1, 2, 4 ... up to `MAX_PAUSE_MS` ms) until the busy timeout has passed since the first attempt;
 * then, or on any other driver error, it throws `StoreUnavailableError` (nothing applied).
 */
export async function runMigration(client: SqliteClient, statements: readonly string[], operation: string): Promise<void> {
  let budget: number;
  try {
    budget = busyTimeoutOf(client);
  } catch (error) {
    throw classifyFailure(error, 'before-commit', operation);
  }
  // NOTE: the deadline is a timer, not a clock reading: it fires during a pause once the busy timeout has
  // passed (an attempt may itself block up to the busy timeout, in the driver).
  let timedOut = budget === 0;
  const deadline = timedOut ? undefined : setTimeout(() => (timedOut = true), budget);
  try {
    let pause = 1;
    for (const statement of statements) {
      for (;;) {
        try {
          client.exec(statement);
          break;
        } catch (error) {
          if (!isLockFailure(error) || timedOut) throw classifyFailure(error, 'before-commit', operation);
          await new Promise((resolve) => setTimeout(resolve, pause));
          pause = Math.min(pause * 2, MAX_PAUSE_MS);
        }
      }
    }
  } finally {
    clearTimeout(deadline);
  }
}
