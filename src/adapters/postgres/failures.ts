/**
 * Maps driver errors (pg, postgres.js, PGlite) to leasefence's typed failures, by what they say about
 * whether the request was applied:
 * - not sent, or sent and definitely rolled back (refused connection, statement or lock timeout, deadlock,
 *   connection lost before COMMIT) -> `StoreUnavailableError`: nothing was applied;
 * - sent, and the reply lost (connection terminated mid-statement or mid-COMMIT, `57P01` admin shutdown)
 *   -> `OutcomeUnknownError`: it may or may not have been applied;
 * - any other SQL error (a bug, a missing table) propagates unchanged.
 */
import { isLeaseError, OutcomeUnknownError, StoreUnavailableError } from '../../errors.js';

/**
 * Where an error happened: while getting a connection (nothing sent), during a single autocommit statement,
 * inside a transaction before COMMIT was sent (so it rolled back), or during COMMIT.
 */
export type FailurePhase = 'connect' | 'statement' | 'before-commit' | 'commit';

/** SQLSTATEs of a lost session: the server ended the connection while the request was in flight. */
const SESSION_LOST = new Set(['57P01', '57P02', '57P05']);

/** SQLSTATEs of a statement the server definitely did not apply, and that may succeed if retried. */
const TRANSIENT = new Set(['57014', '55P03', '40001', '40P01', '57P03', '25P03', '25P04']);

/** Driver error codes raised before a request left the process. */
const NOT_SENT_CODES = new Set(['ECONNREFUSED', 'ENOTFOUND', 'EAI_AGAIN', 'EHOSTUNREACH', 'ENETUNREACH', 'CONNECT_TIMEOUT', 'CONNECTION_ENDED']);
const NOT_SENT_MESSAGE = /not queryable|timeout exceeded when trying to connect|connection timeout|after calling end on the pool|pglite is closed|database is closed/i;

/** Driver error codes and messages of a connection lost while a request may have been in flight. */
const LOST_CODES = new Set(['ECONNRESET', 'EPIPE', 'ETIMEDOUT', 'CONNECTION_CLOSED', 'CONNECTION_DESTROYED']);
const LOST_MESSAGE = /connection terminated|connection (?:was )?(?:closed|lost|reset)|socket (?:hang up|closed)/i;

interface DriverError {
  readonly code?: unknown;
  readonly severity?: unknown;
  readonly message?: unknown;
}

/** Whether `error` is an error the server reported (it has a SQLSTATE and a severity). */
export function isServerError(error: unknown): boolean {
  const { code, severity } = (error ?? {}) as DriverError;
  return typeof code === 'string' && /^[0-9A-Z]{5}$/.test(code) && typeof severity === 'string';
}

function describe(error: unknown): string {
  const { code, message } = (error ?? {}) as DriverError;
  const text = typeof message === 'string' ? message : String(error);
  return typeof code === 'string' ? `${text} (${code})` : text;
}

/** Whether `error` says the connection is gone (so a pooled connection must be destroyed, not reused). */
export function isConnectionFailure(error: unknown): boolean {
  const { code, message } = (error ?? {}) as DriverError;
  if (isServerError(error)) return SESSION_LOST.has(code as string) || (code as string).startsWith('08');
  if (typeof code === 'string' && (LOST_CODES.has(code) || NOT_SENT_CODES.has(code))) return true;
  return typeof message === 'string' && (LOST_MESSAGE.test(message) || NOT_SENT_MESSAGE.test(message));
}

/** The error to throw for `error`, raised by `operation` in `phase`. */
export function classifyFailure(error: unknown, phase: FailurePhase, operation: string): unknown {
  if (isLeaseError(error)) return error;
  const unavailable = () => new StoreUnavailableError(`Postgres unavailable for ${operation}, nothing applied: ${describe(error)}`, { cause: error });
  const unknown = () => new OutcomeUnknownError(`Postgres connection lost during ${operation}, outcome unknown: ${describe(error)}`, { cause: error });
  if (phase === 'connect') return unavailable();
  const { code, message } = (error ?? {}) as DriverError;
  if (isServerError(error)) {
    const state = code as string;
    const lost = SESSION_LOST.has(state) || state.startsWith('08');
    if (lost) return phase === 'before-commit' ? unavailable() : unknown();
    if (phase !== 'commit' && (TRANSIENT.has(state) || state.startsWith('53'))) return unavailable();
    return error;
  }
  const notSent = (typeof code === 'string' && NOT_SENT_CODES.has(code)) || (typeof message === 'string' && NOT_SENT_MESSAGE.test(message));
  if (notSent) return unavailable();
  const lost = (typeof code === 'string' && LOST_CODES.has(code)) || (typeof message === 'string' && LOST_MESSAGE.test(message));
  if (lost) return phase === 'before-commit' ? unavailable() : unknown();
  return error;
}
