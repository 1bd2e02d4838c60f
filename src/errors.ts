/**
 * Errors with stable codes. Expected outcomes (a key held by someone else, a fenced write refused) are
 * values; these errors are for what is truly exceptional, and for the `...OrThrow` variants.
 *
 * The guards check a brand and the `code`, not `instanceof`, so they recognise errors thrown by another
 * copy of the package (ESM and CJS entries, or two versions in one process).
 */
import { describeClaimRefusal, describeRefusal, describeSemaphoreFull } from './describe.js';
import type {
  ClaimHeld,
  ClaimHeldBack,
  ClaimQueued,
  ClaimRecoveryRequired,
  ClaimStateMismatch,
  GateRefusal,
  ReplayConflict,
  SubmissionReplayed,
  WriteRefusal,
} from './fence/operations.js';
import type { SemaphoreFull } from './fence/permits.js';
import type { CheckTtlInsufficient, ClaimRunAlreadyAcquired } from './refusals.js';
import { printable } from './printable.js';
import type { FenceRefusal } from './fence/types.js';
import { toLoggable } from './loggable.js';
import { loggableCause, redactText } from './redact.js';

/** Stable error codes. */
export type LeaseErrorCode =
  | 'INVALID_ARGUMENT'
  | 'LEASE_BUSY'
  | 'LEASE_LOST'
  | 'LEASE_UNCONFIRMED'
  | 'RECOVERY_REQUIRED'
  /** A claim found the key held back until a time (`release` / `setKeyState` with `holdMs`). */
  | 'KEY_HELD_BACK'
  /** A claim whose `expect` did not match the state of the key. */
  | 'STATE_MISMATCH'
  /** A claim found the key claimable but other claims waiting for it first (first come, first served). */
  | 'KEY_QUEUED'
  /** A claim by the holder and run that already hold the key. */
  | 'RUN_ALREADY_ACQUIRED'
  /** The callback of a fenced write refused itself (`context.refuse(code)`). */
  | 'WRITE_REFUSED'
  /** The run id of a submission was recorded already (same payload): nothing was written now. */
  | 'SUBMISSION_REPLAYED'
  /** The run id of a submission was recorded with another payload (or, bound, under another grant). */
  | 'REPLAY_CONFLICT'
  /** `check` found the grant current but with less than `minTtlMs` left. */
  | 'TTL_INSUFFICIENT'
  /** `acquirePermitOrThrow` found the semaphore full (as many live permits as its limit, or none grantable). */
  | 'SEMAPHORE_FULL'
  /** The store does not offer an optional operation (the sets of claim-next): refused before any I/O. */
  | 'UNSUPPORTED_OPERATION'
  | 'GATE_REFUSED'
  | 'STORE_UNAVAILABLE'
  | 'OUTCOME_UNKNOWN'
  /** The backend ran a command and answered with an error (a Redis error reply, a failed command in a write). */
  | 'COMMAND_FAILED';

const BRAND = Symbol.for('leasefence.LeaseError');

/** The JSON of a leasefence error: what `JSON.stringify(error)` writes (tokens as decimal strings, no secret). */
export interface LeaseErrorJson {
  readonly name: string;
  readonly code: LeaseErrorCode;
  readonly message: string;
  /** The error's structured detail (`held`, `refusal`, `key`, `token`, ...), tokens as decimal strings. */
  readonly [detail: string]: unknown;
}

/** How deep `toJSON` follows a `cause` chain. */
const MAX_CAUSE_DEPTH = 4;

/**
 * Base class of every error leasefence throws. Safe to log as it is: the message has control characters
 * escaped and secret-like text redacted; a `cause` that is not a leasefence error is kept only as its
 * `loggableCause` copy (name, message, code), never as the driver's error with its command arguments;
 * `JSON.stringify(error)` gives `toJSON()`.
 */
export class LeaseError extends Error {
  override name = 'LeaseError';
  readonly code: LeaseErrorCode;

  constructor(code: LeaseErrorCode, message: string, options?: { cause?: unknown }) {
    const cause = options?.cause;
    // NOTE: one gate for every message and cause: keys, holders and reasons are caller text (log injection),
    // and driver errors quote the commands they failed on (the secret among their arguments).
    super(printable(redactText(message)), cause === undefined ? undefined : { cause: isLeaseError(cause) ? cause : loggableCause(cause) });
    this.code = code;
    // NOTE: a symbol brand (not instanceof) so guards work across the ESM and CJS copies of this class.
    Object.defineProperty(this, BRAND, { value: true });
  }

  /** The error as log-safe JSON: name, code, message, structured detail (tokens as decimal strings), cause. */
  toJSON(): LeaseErrorJson {
    return errorJson(this, 0) as LeaseErrorJson;
  }
}

function errorJson(error: Error, depth: number): Record<string, unknown> {
  const json = Object.create(null) as Record<string, unknown>;
  json['name'] = error.name;
  if ('code' in error) json['code'] = toLoggable(error.code);
  json['message'] = error.message;
  for (const name of Object.keys(error)) {
    if (!(name in json) && name !== 'stack') json[name] = toLoggable((error as unknown as Record<string, unknown>)[name]);
  }
  const { cause } = error;
  if (cause instanceof Error && depth < MAX_CAUSE_DEPTH) json['cause'] = errorJson(cause, depth + 1);
  return json;
}

/** Bad input, rejected before any store access; no lease was touched. */
export class InvalidArgumentError extends LeaseError {
  override name = 'InvalidArgumentError' as const;
  constructor(message: string) {
    super('INVALID_ARGUMENT', message);
  }
}

/** A claim found the key held by a live grant (thrown by `claimOrThrow`), after waiting `waitedMs` if it waited. */
export class LeaseBusyError extends LeaseError {
  override name = 'LeaseBusyError' as const;
  readonly held: ClaimHeld;
  /** Ms the claim waited for the key (`wait` option) before giving up; `0` for a claim that did not wait. */
  readonly waitedMs: number;
  constructor(held: ClaimHeld, waitedMs = 0) {
    const until = held.expiresAt === null ? 'until revoked' : `until ${new Date(held.expiresAt).toISOString()}`;
    const run = held.runId === null ? '' : ` run ${held.runId}`;
    const waited = waitedMs > 0 ? ` (gave up after waiting ${Math.round(waitedMs)} ms)` : '';
    super('LEASE_BUSY', `lease busy on ${held.key}: held by ${held.holder}${run} with token ${held.token} ${until}${waited}`);
    this.held = held;
    this.waitedMs = waitedMs;
  }
}

/** A claim was refused because a revoked lease's checkpoint awaits recovery (thrown by `claimOrThrow`). */
export class RecoveryRequiredError extends LeaseError {
  override name = 'RecoveryRequiredError' as const;
  readonly refusal: ClaimRecoveryRequired;
  constructor(refusal: ClaimRecoveryRequired) {
    const by = refusal.previous?.by === null || refusal.previous?.by === undefined ? '' : ` by ${refusal.previous.by}`;
    super(
      'RECOVERY_REQUIRED',
      `lease ${refusal.key} was revoked${by} with a checkpoint (token ${refusal.checkpoint?.token ?? '?'}) that must be recovered: claim with { recovering: true }`,
    );
    this.refusal = refusal;
  }
}

/** A claim found the key held back until `refusal.heldUntil` (thrown by `claimOrThrow`). */
export class KeyHeldBackError extends LeaseError {
  override name = 'KeyHeldBackError' as const;
  readonly refusal: ClaimHeldBack;
  constructor(refusal: ClaimHeldBack) {
    super('KEY_HELD_BACK', describeClaimRefusal(refusal));
    this.refusal = refusal;
  }
}

/** An acquire found no permit to grant (thrown by `acquirePermitOrThrow`): `refusal.live` lists the live holders. */
export class SemaphoreFullError extends LeaseError {
  override name = 'SemaphoreFullError' as const;
  readonly refusal: SemaphoreFull;
  constructor(refusal: SemaphoreFull) {
    super('SEMAPHORE_FULL', describeSemaphoreFull(refusal));
    this.refusal = refusal;
  }
}

/** A claim's `expect` did not match the key's state (thrown by `claimOrThrow`): `refusal.field` says expected vs found. */
export class StateMismatchError extends LeaseError {
  override name = 'StateMismatchError' as const;
  readonly refusal: ClaimStateMismatch;
  constructor(refusal: ClaimStateMismatch) {
    super('STATE_MISMATCH', describeClaimRefusal(refusal));
    this.refusal = refusal;
  }
}

/**
 * The key is claimable but other claims wait for it first (thrown by `claimOrThrow`): `refusal` says how many
 * wait, the claim's place (when it waited) and the first waiter.
 */
export class KeyQueuedError extends LeaseError {
  override name = 'KeyQueuedError' as const;
  readonly refusal: ClaimQueued;
  /** Ms the claim waited for the key (`wait` option) before giving up; `0` for a claim that did not wait. */
  readonly waitedMs: number;
  constructor(refusal: ClaimQueued, waitedMs = 0) {
    super('KEY_QUEUED', describeClaimRefusal(refusal));
    this.refusal = refusal;
    this.waitedMs = waitedMs;
  }
}

/** The holder and run already hold the key (thrown by `claimOrThrow`). */
export class RunAlreadyAcquiredError extends LeaseError {
  override name = 'RunAlreadyAcquiredError' as const;
  readonly refusal: ClaimRunAlreadyAcquired;
  constructor(refusal: ClaimRunAlreadyAcquired) {
    super('RUN_ALREADY_ACQUIRED', describeClaimRefusal(refusal));
    this.refusal = refusal;
  }
}

/** A fenced write refused itself from inside the fenced step (thrown by `fencedWriteOrThrow`): `code`, `detail`. */
export class WriteRefusedError extends LeaseError {
  override name = 'WriteRefusedError' as const;
  readonly refusal: WriteRefusal;
  constructor(refusal: WriteRefusal) {
    super('WRITE_REFUSED', describeRefusal(refusal));
    this.refusal = refusal;
  }
}

/**
 * The submission was recorded before with the same payload (thrown by `fencedWriteOrThrow`): nothing was written
 * now, and the first write's receipt is `refusal.submission.receiptJson`. Not a failure of the submission: it
 * landed once. Use `fencedWrite` to handle a replay as a value.
 */
export class SubmissionReplayedError extends LeaseError {
  override name = 'SubmissionReplayedError' as const;
  readonly refusal: SubmissionReplayed;
  constructor(refusal: SubmissionReplayed) {
    super('SUBMISSION_REPLAYED', describeRefusal(refusal));
    this.refusal = refusal;
  }
}

/** The submission's run id was recorded with another payload, or bound to another grant (thrown by `fencedWriteOrThrow`). */
export class ReplayConflictError extends LeaseError {
  override name = 'ReplayConflictError' as const;
  readonly refusal: ReplayConflict;
  constructor(refusal: ReplayConflict) {
    super('REPLAY_CONFLICT', describeRefusal(refusal));
    this.refusal = refusal;
  }
}

/** `checkOrThrow` found the grant current but with less than `minTtlMs` left. */
export class TtlInsufficientError extends LeaseError {
  override name = 'TtlInsufficientError' as const;
  readonly refusal: CheckTtlInsufficient;
  constructor(refusal: CheckTtlInsufficient) {
    super('TTL_INSUFFICIENT', describeRefusal(refusal));
    this.refusal = refusal;
  }
}

/**
 * The store does not offer an optional operation: `addItems`, `removeItems` and `claimNext` need a store with
 * sets (see `Store.claimNext`). Thrown before any I/O; `operation` names what was asked.
 */
export class UnsupportedOperationError extends LeaseError {
  override name = 'UnsupportedOperationError' as const;
  readonly operation: string;
  readonly storeId: string;
  constructor(operation: string, storeId: string, why: string) {
    super('UNSUPPORTED_OPERATION', `${operation} is not supported by store ${storeId}: ${why}`);
    this.operation = operation;
    this.storeId = storeId;
  }
}

/** The grant no longer holds: renew, checkpoint, fenced write, release or recover was refused, or `withLease` lost it. */
export class LeaseLostError extends LeaseError {
  override name = 'LeaseLostError' as const;
  readonly refusal: FenceRefusal;
  constructor(refusal: FenceRefusal) {
    super('LEASE_LOST', describeRefusal(refusal));
    this.refusal = refusal;
  }
}

/**
 * `withLease` could not confirm a renewal before the safe deadline (the store was unreachable or slow):
 * the grant may have expired, so the work must stop. `cause` holds the last store error, if any.
 */
export class LeaseUnconfirmedError extends LeaseError {
  override name = 'LeaseUnconfirmedError' as const;
  readonly key: string;
  readonly token: bigint;
  constructor(key: string, token: bigint, options?: { cause?: unknown }) {
    const cause = options?.cause === undefined ? undefined : isLeaseError(options.cause) ? options.cause : loggableCause(options.cause);
    const why = cause === undefined ? '' : `: ${cause.message}`;
    super(
      'LEASE_UNCONFIRMED',
      `lease on ${key} (token ${token}) could not be renewed before its safe deadline${why}`,
      cause === undefined ? undefined : { cause },
    );
    this.key = key;
    this.token = token;
  }
}

/** A token gate refused a write carrying an older token (or a token of another key). */
export class GateRefusedError extends LeaseError {
  override name = 'GateRefusedError' as const;
  readonly refusal: GateRefusal;
  constructor(refusal: GateRefusal) {
    const { resource, expected, found } = refusal;
    super(
      'GATE_REFUSED',
      `token gate refused write to ${resource} (${refusal.reason}): carried ${expected.key} token ${expected.token}, resource was written by ${found.key} token ${found.token}`,
    );
    this.refusal = refusal;
  }
}

/** The store could not be reached; the request was not applied. */
export class StoreUnavailableError extends LeaseError {
  override name = 'StoreUnavailableError' as const;
  constructor(message: string, options?: { cause?: unknown }) {
    super('STORE_UNAVAILABLE', message, options);
  }
}

/** The request was sent but its reply was lost: it may or may not have been applied. */
export class OutcomeUnknownError extends LeaseError {
  override name = 'OutcomeUnknownError' as const;
  constructor(message: string, options?: { cause?: unknown }) {
    super('OUTCOME_UNKNOWN', message, options);
  }
}

/** Whether `error` is a leasefence error (from any copy of the package), optionally with a given code. */
export function isLeaseError(error: unknown, code?: LeaseErrorCode): error is LeaseError {
  if (typeof error !== 'object' || error === null) return false;
  try {
    if ((error as Record<symbol, unknown>)[BRAND] !== true) return false;
    return code === undefined || (error as LeaseError).code === code;
  } catch {
    // NOTE: what a callback threw may be a (revoked) Proxy that throws on every read: no LeaseError, and a
    // guard in a catch block must never throw in place of the error it is asked about.
    return false;
  }
}

/** Whether `error` says the lease was lost: fenced (`LEASE_LOST`) or unconfirmed past its safe deadline. */
export function isLeaseLostError(error: unknown): error is LeaseLostError | LeaseUnconfirmedError {
  return isLeaseError(error, 'LEASE_LOST') || isLeaseError(error, 'LEASE_UNCONFIRMED');
}

/** Whether `error` says the store was unreachable or the outcome is unknown: a transient condition. */
export function isStoreFailure(error: unknown): error is StoreUnavailableError | OutcomeUnknownError {
  return isLeaseError(error, 'STORE_UNAVAILABLE') || isLeaseError(error, 'OUTCOME_UNKNOWN');
}
