/**
 * The lease model, as plain data. Everything in `fence/` is pure: records in, records and outcomes out,
 * and "now" (the store's clock, in epoch milliseconds) is always an argument.
 */

/** Epoch milliseconds on the store's clock. */
export type StoreTime = number;

/** Attributes bound to a grant at claim time; every fenced operation may require some of them to match. */
export type LeaseAttributes = Readonly<Record<string, string>>;

/**
 * The live (or expired but not yet replaced) grant of a lease.
 * Invariant: when a record has a grant, `grant.token === record.token`.
 */
export interface GrantState {
  /** The fencing token of this grant. */
  readonly token: bigint;
  /** Who holds it (a worker id). */
  readonly holder: string;
  /** The holder's run id, when it gave one: one holder may run several times. */
  readonly runId: string | null;
  /** Random proof of being this grant (tokens are guessable, secrets are not). Never shown by inspect. */
  readonly secret: string;
  /** When the grant was made, on the store's clock. */
  readonly acquiredAt: StoreTime;
  /** When it expires on the store's clock (strict: at `now === expiresAt` it is expired); `null`: never. */
  readonly expiresAt: StoreTime | null;
  /** Attributes bound at claim time. */
  readonly attributes: LeaseAttributes;
}

/**
 * Values that belong to a key rather than to a grant (a content revision, the current tier of a ramp), set by
 * writers who do not hold the lease (`setKeyState`). Names and values are strings; an absent name reads as
 * `null`. A change of any value ends the grant that holds the key (`state-changed`), so a grant is always bound
 * to the values it was claimed under.
 */
export type KeyState = Readonly<Record<string, string>>;

/**
 * The value of `name` in a key state (`null`: absent). Own properties only, so a name like `__proto__` or
 * `constructor` reads as any other name.
 */
export function stateValue(state: Readonly<Record<string, string | null>>, name: string): string | null {
  return Object.hasOwn(state, name) ? (state[name] ?? null) : null;
}

/** One value of a key's state that changed: its name, the value before and after (`null`: absent). */
export interface StateChange {
  readonly name: string;
  readonly from: string | null;
  readonly to: string | null;
}

/**
 * How a grant ended: released by its holder, found expired by the next claim, revoked by an operator, or
 * ended by a change of the key's state (`setKeyState`).
 */
export type EndingKind = 'released' | 'expired' | 'revoked' | 'state-changed';

/** The record of a grant that has ended. */
export interface Ending {
  readonly kind: EndingKind;
  /** The token of the grant that ended. */
  readonly token: bigint;
  readonly holder: string;
  readonly runId: string | null;
  /** When it ended on the store's clock (for `expired`: its expires-at). */
  readonly at: StoreTime;
  /** For `revoked`: the operator's reason. */
  readonly reason: string | null;
  /** For `revoked`: who revoked it; for `state-changed`: who changed the state. */
  readonly by: string | null;
  /**
   * For `state-changed`: the first value (by name, in code-unit order) that changed. Absent for every other kind,
   * so endings of the other kinds keep their shape.
   */
  readonly change?: StateChange;
}

/**
 * A submission recorded under a grant (`fencedWrite` with `submission`): kept per key so that the same run's
 * retry is answered `replayed` (same payload) or `replay-conflict` (another payload) instead of writing again.
 */
export interface SubmissionRecord {
  /** The run id the submission was made under (the replay key). */
  readonly runId: string;
  /** SHA-256 (hex) of the payload's canonical JSON (object keys sorted): equal payloads, equal digests. */
  readonly digest: string;
  /** The grant it landed under. */
  readonly token: bigint;
  readonly holder: string;
  /** When it landed, on the store's clock. */
  readonly at: StoreTime;
  /** What the submitter asked to be returned on a replay (JSON text), `null`: nothing. */
  readonly receiptJson: string | null;
}

/** Submissions a record keeps per key: the newest this many (older ones are forgotten, oldest first). */
export const SUBMISSION_RETENTION = 32;

/** One waiting claim in a key's queue (see `queue.ts`), on the store's clock. */
export interface QueuedWaiter {
  /** Random id the waiting claim keeps for its whole wait (not the grant's secret). */
  readonly waiterId: string;
  /** The holder that waits (shown to operators and in `queued` refusals). */
  readonly holder: string;
  /** When the store first queued it: the queue is in this order. */
  readonly arrivedAt: StoreTime;
  /** When its entry expires unless an attempt renews it (strict: at `now === expiresAt` it is gone). */
  readonly expiresAt: StoreTime;
}

/** The progress a holder saved under its grant, kept for the next holder. */
export interface CheckpointRecord {
  /** The checkpoint as JSON text (validated and size-checked before it reaches a store). */
  readonly json: string;
  /** The token of the grant that wrote (or adopted) it. */
  readonly token: bigint;
  /** When it was written, on the store's clock. */
  readonly writtenAt: StoreTime;
}

/**
 * Everything a store keeps per key. A record is deleted only by an operator's `remove`; tokens stay increasing
 * across that because every store mints above a floor that outlives the record (its clock, or a store-wide
 * counter), so a token is never handed out twice for a key.
 */
export interface LeaseRecord {
  readonly key: string;
  /** The highest token issued (or burned by a revoke) for this key. Only grows. */
  readonly token: bigint;
  /** The current grant; `null` after release or revoke. May be expired: expiry is judged against `now`. */
  readonly grant: GrantState | null;
  /** How the most recent ended grant ended (released or revoked; expiries are recorded at takeover). */
  readonly ending: Ending | null;
  /** The latest checkpoint, kept across expiry, revoke and release. */
  readonly checkpoint: CheckpointRecord | null;
  /**
   * Set by a revoke with `requireRecovery` while a checkpoint exists: plain claims are refused until a
   * claim that says `recovering: true` takes the lease and resolves the checkpoint (resume or discard).
   */
  readonly recoveryRequired: boolean;
  /** The key's state (see `KeyState`); `{}` when none was set. */
  readonly state: KeyState;
  /** Claims are refused (`held-back`) while the store's now is before this time; `null`: no hold. */
  readonly heldUntil: StoreTime | null;
  /** The newest submissions, oldest first, at most `SUBMISSION_RETENTION`. */
  readonly submissions: readonly SubmissionRecord[];
  /**
   * The key's queue of waiting claims, oldest first (see `queue.ts`); entries past their `expiresAt` are gone
   * however long they stay stored, and a claim prunes them. `[]` when nobody waits.
   */
  readonly waiters: readonly QueuedWaiter[];
}

/** What a holder presents to prove it holds a grant: the fence. */
export interface Fence {
  readonly key: string;
  readonly token: bigint;
  readonly secret: string;
  readonly holder: string;
  readonly runId: string | null;
  /** Attributes the operation requires the grant to have been bound with (a subset match). */
  readonly attributes?: LeaseAttributes;
}

/** Why a fence does not hold. */
export type FenceReason =
  | 'missing'
  | 'not-held'
  | 'expired'
  | 'superseded'
  | 'released'
  | 'revoked'
  | 'state-changed'
  | 'wrong-secret'
  | 'holder-mismatch'
  | 'attribute-mismatch';

/** What the presented fence expected. */
export interface FenceExpectation {
  readonly token: bigint;
  readonly holder: string;
  readonly runId: string | null;
}

/** What the store held instead, at its clock. */
export interface FenceFinding {
  /** The key's current token (`null`: no record). */
  readonly token: bigint | null;
  /** The current grant's holder, run and expiry (`null` when nothing is held). */
  readonly holder: string | null;
  readonly runId: string | null;
  readonly expiresAt: StoreTime | null;
  /** How the most recent grant ended, if it did. */
  readonly ending: Ending | null;
}

/** An attribute that did not match. */
export interface AttributeMismatch {
  readonly name: string;
  /** `null` only for `state-changed`: the value was absent when the grant was made. */
  readonly expected: string | null;
  readonly found: string | null;
}

/** A failed fence: why, what was expected, what was found, and the store's now. */
export interface FenceRefusal {
  readonly ok: false;
  readonly reason: FenceReason;
  readonly key: string;
  readonly expected: FenceExpectation;
  readonly found: FenceFinding;
  /**
   * Set for `attribute-mismatch` (the bound attribute) and for `state-changed` (the key-state value that
   * changed: `expected` is its value when the grant was made, `found` its value now).
   */
  readonly attribute: AttributeMismatch | null;
  readonly now: StoreTime;
}

/** The verdict of checking a fence against a record at the store's clock. */
export type FenceVerdict = { readonly ok: true } | FenceRefusal;
