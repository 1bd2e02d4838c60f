/**
 * Maps driver errors (pg, postgres.js, PGlite) to leasefence's typed failures, by what they say about
 * whether the request was applied:
 * - not sent, or sent and definitely rolled back (refused connection, statement or lock timeout, deadlock,
 *   connection lost before COMMIT) -> `StoreUnavailableError`: nothing was applied;
 * - sent, and the reply lost (connection terminated mid-statement or mid-COMMIT, `57P01` admin shutdown)
 *   -> `OutcomeUnknownError`: it may or may not have been applied;
 * - a lease table or function that is missing or out of date (never migrated) -> `StoreUnavailableError`
 *   naming the fix (`store.migrate()`);
 * - any other SQL error (a bug, a constraint of your own table) propagates unchanged.
 * A typed failure's `cause` is `loggableCause(error)` (src/redact.ts), never the driver's error, which may
 * carry the statement and its parameters.
 */
import { isLeaseError, OutcomeUnknownError, StoreUnavailableError } from '../../errors.js';
import { loggableCause, redactText } from '../../redact.js';

/**
 * Where an error happened: while getting a connection (nothing sent), during a single autocommit statement,
 * inside a transaction before COMMIT was sent (so it rolled back), or during COMMIT.
 */
export type FailurePhase = 'connect' | 'statement' | 'before-commit' | 'commit';

/** SQLSTATEs of a missing relation, column or function: the schema was never migrated, or is out of date. */
const MISSING_SCHEMA = new Set(['42P01', '42703', '42883']);

/** SQLSTATEs of a lock that could not be had in time or a deadlock: contention with another transaction. */
const CONTENTION = new Set(['55P03', '40P01']);

/**
 * leasefence's own schema objects, to tell a never-migrated table from a missing table of yours: a
 * missing-object error whose message names one of `names` is answered with `fix`.
 */
export interface SchemaCheck {
  /** Unquoted object names (the table, its functions). */
  readonly names: readonly string[];
  /** What to run, e.g. `await store.migrate()`. */
  readonly fix: string;
}

/**
 * SQLSTATEs of a named prepared statement missing on the server connection (26000) or already there
 * (42P05): what a pg client's prepared statements meet behind a transaction-mode pooler, which hands each
 * transaction to any server connection. The message names the statement, so only leasefence's own count.
 */
const PREPARED_ELSEWHERE = new Set(['26000', '42P05']);
const OWN_PREPARED_STATEMENT = /prepared statement "leasefence_[0-9a-f]{16}"/;

/** SQLSTATEs of a lost session: the server ended the connection while the request was in flight. */
const SESSION_LOST = new Set(['57P01', '57P02', '57P05']);

/** SQLSTATEs of a statement the server definitely did not apply, and that may succeed if retried. */
const TRANSIENT = new Set(['57014', '55P03', '40001', '40P01', '57P03', '25P03', '25P04']);

/** Driver error codes raised before a request left the process. */
const NOT_SENT_CODES = new Set([
  'ECONNREFUSED',
  'ENOTFOUND',
  'EAI_AGAIN',
  'EHOSTUNREACH',
  'ENETUNREACH',
  'CONNECT_TIMEOUT',
  'CONNECTION_ENDED',
]);
const NOT_SENT_MESSAGE =
  /not queryable|timeout exceeded when trying to connect|connection timeout|after calling end on the pool|pglite is closed|database is closed/i;

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

/** The driver error's message and code, with anything that looks like a secret redacted. */
function describe(error: unknown): string {
  const { code, message } = (error ?? {}) as DriverError;
  let text: string;
  try {
    text = typeof message === 'string' ? message : String(error);
  } catch {
    text = 'an error that could not be read';
  }
  return redactText(typeof code === 'string' ? `${text} (${code})` : text);
}

/** Whether `error` is a missing-object error about one of leasefence's own objects. */
function isMissingSchema(error: unknown, schema: SchemaCheck | undefined): boolean {
  if (schema === undefined || !isServerError(error)) return false;
  const { code, message } = error as DriverError;
  // NOTE: Postgres quotes relation and column names and writes a function as name(argument types), but a
  // column read through an alias unquoted ("column l.waited_until does not exist").
  return (
    MISSING_SCHEMA.has(code as string) &&
    typeof message === 'string' &&
    schema.names.some((name) => message.includes(`"${name}"`) || message.includes(`${name}(`) || message.includes(`.${name} `))
  );
}

/** Whether `error` says the connection is gone (so a pooled connection must be destroyed, not reused). */
export function isConnectionFailure(error: unknown): boolean {
  const { code, message } = (error ?? {}) as DriverError;
  if (isServerError(error)) return SESSION_LOST.has(code as string) || (code as string).startsWith('08');
  if (typeof code === 'string' && (LOST_CODES.has(code) || NOT_SENT_CODES.has(code))) return true;
  return typeof message === 'string' && (LOST_MESSAGE.test(message) || NOT_SENT_MESSAGE.test(message));
}

/** The error to throw for `error`, raised by `operation` in `phase` (`schema`: leasefence's own objects). */
export function classifyFailure(error: unknown, phase: FailurePhase, operation: string, schema?: SchemaCheck): unknown {
  if (isLeaseError(error)) return error;
  const cause = () => ({ cause: loggableCause(error) });
  const unavailable = () =>
    new StoreUnavailableError(`Postgres unavailable for ${operation}, nothing applied: ${describe(error)}`, cause());
  const unknown = () =>
    new OutcomeUnknownError(`Postgres connection lost during ${operation}, outcome unknown: ${describe(error)}`, cause());
  if (phase === 'connect') return unavailable();
  const { code, message } = (error ?? {}) as DriverError;
  if (isServerError(error)) {
    const state = code as string;
    const lost = SESSION_LOST.has(state) || state.startsWith('08');
    if (lost) return phase === 'before-commit' ? unavailable() : unknown();
    if (isMissingSchema(error, schema)) {
      return new StoreUnavailableError(
        `${operation}: leasefence's table or function is missing or out of date (${describe(error)}): run ${(schema as SchemaCheck).fix} once (or apply the DDL in your migrations); nothing applied`,
        cause(),
      );
    }
    if (PREPARED_ELSEWHERE.has(state) && typeof message === 'string' && OWN_PREPARED_STATEMENT.test(message)) {
      // NOTE: refused at Parse or Bind, before anything ran (inside a transaction, which then rolled back).
      return new StoreUnavailableError(
        `${operation}: a prepared statement of leasefence was missing or already present on the server connection (${describe(error)}): the client goes through a pooler in transaction mode (PgBouncer before 1.21, Supabase's or Neon's pooler), so create the store and token gate with \`prepare: false\`; nothing applied`,
        cause(),
      );
    }
    if (phase !== 'commit' && CONTENTION.has(state)) {
      return new StoreUnavailableError(
        `${operation} waited too long for a row lock another transaction holds (contention, e.g. a fenced write in progress on the same lease; not an outage): nothing applied, retry (${describe(error)})`,
        cause(),
      );
    }
    if (phase !== 'commit' && (TRANSIENT.has(state) || state.startsWith('53'))) return unavailable();
    return error;
  }
  const notSent = (typeof code === 'string' && NOT_SENT_CODES.has(code)) || (typeof message === 'string' && NOT_SENT_MESSAGE.test(message));
  if (notSent) return unavailable();
  const lost = (typeof code === 'string' && LOST_CODES.has(code)) || (typeof message === 'string' && LOST_MESSAGE.test(message));
  if (lost) return phase === 'before-commit' ? unavailable() : unknown();
  return error;
}

/**
 * An SQL error of one of leasefence's own statements that is not a typed failure (a bug, a value the
 * server refused): a plain Error with its message (redacted), SQLSTATE `code` and a loggable cause, so
 * that the driver's error, which may carry the statement's parameters, never reaches the caller.
 */
export function ownStatementFailure(error: unknown, operation: string): unknown {
  if (isLeaseError(error) || !isServerError(error)) return error;
  const copy = new Error(`leasefence/postgres: ${operation} failed: ${describe(error)}`, { cause: loggableCause(error) });
  Object.defineProperty(copy, 'code', { value: (error as DriverError).code, enumerable: true });
  return copy;
}
