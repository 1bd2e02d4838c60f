/**
 * Maps driver errors (better-sqlite3 `SqliteError`, node:sqlite errors) to leasefence's typed failures, by
 * what they say about whether the operation was applied:
 * - the write lock was not obtained within the busy timeout, the file is locked, or the connection is
 *   closed, before COMMIT -> `StoreUnavailableError`: the transaction rolled back, nothing was applied;
 * - COMMIT itself failed (an I/O error, a full disk) -> `OutcomeUnknownError`: SQLite rolls back in most
 *   such cases, but not all, so leasefence does not claim to know;
 * - any other error (a missing table: `migrate()` was not run; a bug) propagates unchanged.
 * The cause attached is `loggableCause(error)`, never the driver's error object itself.
 */
import { isLeaseError, loggableCause, OutcomeUnknownError, StoreUnavailableError } from '../../store-entry.js';

/** Where an error happened: before COMMIT (the transaction rolls back) or during COMMIT. */
export type FailurePhase = 'before-commit' | 'commit';

/** SQLite primary result codes of a lock not obtained: SQLITE_BUSY (5) and SQLITE_LOCKED (6). */
const LOCK_RESULT_CODES: ReadonlySet<number> = new Set([5, 6]);

interface DriverError {
  /** better-sqlite3: `SQLITE_BUSY`, `SQLITE_BUSY_SNAPSHOT`...; node:sqlite: `ERR_SQLITE_ERROR` or `ERR_INVALID_STATE`. */
  readonly code?: unknown;
  /** node:sqlite: the extended result code. */
  readonly errcode?: unknown;
  readonly message?: unknown;
}

/** Whether `error` says another connection holds the lock this one needed. */
function isLockTimeout(error: DriverError): boolean {
  const { code, errcode } = error;
  if (typeof code === 'string' && /^SQLITE_(BUSY|LOCKED)/.test(code)) return true;
  // NOTE: the low byte of an extended result code is its primary code (SQLITE_BUSY_SNAPSHOT = 5 | 2 << 8).
  return typeof errcode === 'number' && LOCK_RESULT_CODES.has(errcode & 0xff);
}

/** Whether `error` is a driver error saying another connection holds the lock this one needed. */
export function isLockFailure(error: unknown): boolean {
  return typeof error === 'object' && error !== null && isLockTimeout(error as DriverError);
}

/** Whether `error` says the connection is closed (nothing can have been sent). */
function isClosed(error: DriverError): boolean {
  return typeof error.message === 'string' && /(database|connection) (connection )?is not open/i.test(error.message);
}

/** Whether `error` comes from the SQLite driver (better-sqlite3 `SqliteError`, node:sqlite `ERR_SQLITE_ERROR`). */
function isDriverError(error: DriverError): boolean {
  const { code, errcode } = error;
  return (typeof code === 'string' && (code.startsWith('SQLITE_') || code === 'ERR_SQLITE_ERROR')) || typeof errcode === 'number';
}

/** Whether `error` says leasefence's table (or one of its columns) is missing. */
function isMissingSchema(error: DriverError): boolean {
  return typeof error.message === 'string' && /no such table|no such column|has no column named/i.test(error.message);
}

/**
 * What the caller's own callback threw inside a transaction (a fenced or gate write): `classifyFailure`
 * hands it back as it is, so the caller sees its own error, never a store failure.
 */
export class CallbackFailure {
  constructor(readonly error: unknown) {}
}

/** Runs the caller's callback, marking what it throws as the caller's (see `CallbackFailure`). */
export function runCallback<T>(callback: () => T): T {
  try {
    return callback();
  } catch (error) {
    throw new CallbackFailure(error);
  }
}

/** The error to throw for `error`, raised by `operation` in `phase`. */
export function classifyFailure(error: unknown, phase: FailurePhase, operation: string): unknown {
  if (error instanceof CallbackFailure) return error.error;
  if (isLeaseError(error)) return error;
  const driverError = (error ?? {}) as DriverError;
  const text = typeof driverError.message === 'string' ? driverError.message : String(error);
  if (phase === 'before-commit' && isMissingSchema(driverError)) {
    return new StoreUnavailableError(
      `SQLite unavailable for ${operation}, nothing applied: ${text} (run \`await store.migrate()\` once, or the schema SQL in your migrations)`,
      { cause: loggableCause(error) },
    );
  }
  // NOTE: any driver error before COMMIT (read-only file, disk full, corrupt file, a lock) rolled back:
  // nothing applied, whatever its kind.
  if (phase === 'before-commit' && (isLockTimeout(driverError) || isClosed(driverError) || isDriverError(driverError))) {
    return new StoreUnavailableError(`SQLite unavailable for ${operation}, nothing applied: ${text}`, { cause: loggableCause(error) });
  }
  if (phase === 'commit') {
    return new OutcomeUnknownError(`SQLite COMMIT failed during ${operation}, outcome unknown: ${text}`, { cause: loggableCause(error) });
  }
  return error;
}
