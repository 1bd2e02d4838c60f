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

/** How a grant ended. */
export type EndingKind = 'released' | 'expired' | 'revoked';

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
  /** For `revoked`: who revoked it. */
  readonly by: string | null;
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
 * Everything a store keeps per key. A record, once created, is never deleted: its `token` is the floor for
 * every later grant, so a token is never handed out twice for a key.
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
  readonly expected: string;
  readonly found: string | null;
}

/** A failed fence: why, what was expected, what was found, and the store's now. */
export interface FenceRefusal {
  readonly ok: false;
  readonly reason: FenceReason;
  readonly key: string;
  readonly expected: FenceExpectation;
  readonly found: FenceFinding;
  /** Set for `attribute-mismatch`. */
  readonly attribute: AttributeMismatch | null;
  readonly now: StoreTime;
}

/** The verdict of checking a fence against a record at the store's clock. */
export type FenceVerdict = { readonly ok: true } | FenceRefusal;
