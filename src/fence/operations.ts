/**
 * The commands a store applies and the outcomes it returns. These types are the vocabulary shared by the
 * pure transitions (`transitions.ts`) and every `Store` adapter: an adapter that evaluates a command in SQL
 * or Lua must return exactly the outcome the pure transition would.
 */
import type {
  AttributeMismatch,
  CheckpointRecord,
  Ending,
  Fence,
  FenceRefusal,
  GrantState,
  KeyState,
  LeaseAttributes,
  QueuedWaiter,
  StoreTime,
  SubmissionRecord,
} from './types.js';
import type { ClaimQueue } from './queue.js';

/** What a store's `claim` receives: the key, the would-be holder and the new grant's secret and TTL. */
export interface ClaimCommand {
  readonly key: string;
  readonly holder: string;
  readonly runId: string | null;
  /** Random secret chosen by the caller (at least 128 bits). */
  readonly secret: string;
  /** Time to live in ms; `null`: the grant never expires (only an operator's revoke ends it). */
  readonly ttlMs: number | null;
  readonly attributes: LeaseAttributes;
  /** Acknowledges a pending recovery: allowed to claim a lease revoked with `requireRecovery`. */
  readonly recovering: boolean;
  /**
   * Key-state values the claim requires (a subset match; a `null` value requires the name to be absent),
   * checked before anything else: refused `state-mismatch` naming the first value (by name) that differs.
   * Absent: any state.
   */
  readonly expect?: Readonly<Record<string, string | null>>;
  /**
   * A waiting claim's attempt (see `queue.ts`): the waiters it stands for, queued (or renewed) in the key's queue
   * when the key is not theirs yet. The claim is granted only when its waiter (the first id) is the first live
   * waiter. Absent: a claim that does not wait, refused `queued` while anybody waits (unless `jumpQueue`).
   */
  readonly queue?: ClaimQueue;
  /**
   * Granted ahead of the key's waiters when the key is claimable (an operator's claim, a claim that must not
   * wait behind others). A claim that says `recovering` of a key awaiting recovery is never queued either.
   */
  readonly jumpQueue?: boolean;
}

/** The previous grant's fate, handed to a new holder so it can resume or discard the checkpoint. */
export interface Inheritance {
  /** How the previous grant ended (`null`: this is the first grant of the key). */
  readonly previous: Ending | null;
  /** The last checkpoint, stamped with the token that wrote it (`null`: none). */
  readonly checkpoint: CheckpointRecord | null;
}

export interface StoreClaimGranted extends Inheritance {
  readonly ok: true;
  readonly key: string;
  readonly token: bigint;
  readonly acquiredAt: StoreTime;
  readonly expiresAt: StoreTime | null;
  /** The store's now when it applied the claim. */
  readonly now: StoreTime;
}

/** Somebody else holds a live grant. */
export interface ClaimHeld {
  readonly ok: false;
  readonly reason: 'held';
  readonly key: string;
  readonly token: bigint;
  readonly holder: string;
  readonly runId: string | null;
  readonly acquiredAt: StoreTime;
  readonly expiresAt: StoreTime | null;
  readonly now: StoreTime;
}

/** The lease was revoked with `requireRecovery` and the claim did not say `recovering: true`. */
export interface ClaimRecoveryRequired extends Inheritance {
  readonly ok: false;
  readonly reason: 'recovery-required';
  readonly key: string;
  readonly token: bigint;
  readonly now: StoreTime;
}

/** The key's state does not have a value the claim's `expect` requires. */
export interface ClaimStateMismatch {
  readonly ok: false;
  readonly reason: 'state-mismatch';
  readonly key: string;
  /** The first required value (by name) that differs: what the claim expected, what the key has. */
  readonly field: AttributeMismatch;
  readonly now: StoreTime;
}

/** The key is held back (a release with `holdMs`, or `setKeyState` with `hold`) until `heldUntil`. */
export interface ClaimHeldBack {
  readonly ok: false;
  readonly reason: 'held-back';
  readonly key: string;
  readonly token: bigint;
  /** Claims are granted again once the store's now reaches this time. */
  readonly heldUntil: StoreTime;
  readonly now: StoreTime;
}

/**
 * The key is claimable, but other claims wait for it and the first of them is not this claim's waiter: first
 * come, first served (see `queue.ts`).
 */
export interface ClaimQueued {
  readonly ok: false;
  readonly reason: 'queued';
  readonly key: string;
  readonly token: bigint;
  /** How many live waiters the key's queue has. */
  readonly waiting: number;
  /** This claim's waiter's place (1: next); `null` for a claim that does not wait (or found the queue full). */
  readonly position: number | null;
  /** The first waiter: who it is, and when its entry expires unless it asks again (then the next is first). */
  readonly first: { readonly holder: string; readonly arrivedAt: StoreTime; readonly expiresAt: StoreTime };
  readonly now: StoreTime;
}

/**
 * What a store's `claim` answers: granted, held by someone else, waiting for a recovery, held back until a
 * time, the key's state differs from the claim's `expect`, or others wait first. Order of the checks: `expect`,
 * then a live grant (`held`), then the hold, then a pending recovery, then the queue.
 */
export type StoreClaimOutcome = StoreClaimGranted | ClaimHeld | ClaimRecoveryRequired | ClaimHeldBack | ClaimStateMismatch | ClaimQueued;

/** What a store's `dequeue` receives: waiters that stopped waiting (their deadline passed, their signal aborted). */
export interface DequeueCommand {
  readonly key: string;
  readonly waiterIds: readonly string[];
}

/** What a store's `dequeue` answers: how many of the waiters it removed from the key's queue. */
export interface DequeueOutcome {
  readonly ok: true;
  readonly key: string;
  readonly removed: number;
  /**
   * The first live waiter was removed while the key is claimable: the next waiter may claim it now (the store
   * tells release watchers, as a release does).
   */
  readonly freed: boolean;
  readonly now: StoreTime;
}

/** What a store's `renew` receives: the grant's fence and the new TTL. */
export interface RenewCommand {
  readonly fence: Fence;
  /** New time to live from the store's now; `null`: never expires. */
  readonly ttlMs: number | null;
}

/** What a store's `renew` answers: the new expiry on the store's clock, or the fence's refusal. */
export type RenewOutcome =
  | { readonly ok: true; readonly key: string; readonly token: bigint; readonly expiresAt: StoreTime | null; readonly now: StoreTime }
  | FenceRefusal;

/** What a store's `checkpoint` receives: the grant's fence and the progress as JSON text. */
export interface CheckpointCommand {
  readonly fence: Fence;
  /** Validated JSON text. */
  readonly json: string;
}

/** What a store's `checkpoint` answers: the saved checkpoint, or the fence's refusal. */
export type CheckpointOutcome = { readonly ok: true; readonly checkpoint: CheckpointRecord; readonly now: StoreTime } | FenceRefusal;

/** What a store's `release` receives: the grant's fence and what to leave for the next holder. */
export interface ReleaseCommand {
  readonly fence: Fence;
  /**
   * What to leave for the next holder: `undefined` keeps the current checkpoint, `null` clears it,
   * a JSON text replaces it (stamped with the releasing token).
   */
  readonly checkpointJson?: string | null;
  /**
   * Hold the key back for this many ms from the store's now (a retry schedule): claims are refused
   * `held-back` until then. Absent: no hold (a hold set earlier by `setKeyState` is kept).
   */
  readonly holdMs?: number;
}

/** What a store's `release` answers: released (or already released by this grant), or the fence's refusal. */
export type ReleaseOutcome =
  | {
      readonly ok: true;
      readonly key: string;
      readonly token: bigint;
      /** `true` when this grant had already been released (release is idempotent for the same grant). */
      readonly alreadyReleased: boolean;
      readonly now: StoreTime;
    }
  | FenceRefusal;

/** What a store's `revoke` receives: an operator's force-release of whatever grant holds the key. */
export interface RevokeCommand {
  readonly key: string;
  readonly reason: string;
  /** Who revoked (an operator id). */
  readonly by: string;
  /** Refuse plain claims until a `recovering` claim resolves the kept checkpoint. */
  readonly requireRecovery: boolean;
  /** Revoke only if this token is the current grant (an operator acting on what a dashboard showed). */
  readonly expectedToken: bigint | null;
}

/** What a store's `revoke` answers: the grant it ended and the key's new token, or why there was nothing to revoke. */
export type RevokeOutcome =
  | {
      readonly ok: true;
      readonly key: string;
      /** The grant that was revoked. */
      readonly revoked: Ending;
      /** The key's token after the revoke (moved on past the revoked grant). */
      readonly token: bigint;
      readonly recoveryRequired: boolean;
      readonly now: StoreTime;
    }
  | {
      readonly ok: false;
      /** `missing`: no such key; `not-held`: nothing to revoke; `superseded`: `expectedToken` is not current. */
      readonly reason: 'missing' | 'not-held' | 'superseded';
      readonly key: string;
      readonly token: bigint | null;
      readonly now: StoreTime;
    };

/** What a new holder does with the checkpoint it inherited: adopt it (`resume`) or clear it (`discard`). */
export type RecoveryAction = 'resume' | 'discard';

/** What a store's `recover` receives: the new grant's fence and the recovery action. */
export interface RecoverCommand {
  readonly fence: Fence;
  /** `resume`: adopt the inherited checkpoint (restamped with this token); `discard`: clear it. */
  readonly action: RecoveryAction;
}

/** What a store's `recover` answers: the checkpoint as it now stands, or the fence's refusal. */
export type RecoverOutcome =
  | { readonly ok: true; readonly key: string; readonly checkpoint: CheckpointRecord | null; readonly now: StoreTime }
  | FenceRefusal;

/** A holder as shown to operators: everything but the secret. */
export type GrantView = Omit<GrantState, 'secret'> & {
  /** Whether the grant is live at the store's now. */
  readonly live: boolean;
};

/** Everything a store knows about a key except the secret, with the store's now: for operators and dashboards. */
export interface StoreInspection {
  readonly key: string;
  /** `false`: the key was never claimed (or the store lost it). */
  readonly exists: boolean;
  /** The key's current token (`0n` when it does not exist). */
  readonly token: bigint;
  readonly grant: GrantView | null;
  readonly ending: Ending | null;
  readonly checkpoint: CheckpointRecord | null;
  readonly recoveryRequired: boolean;
  /** The key's state (`{}`: none). */
  readonly state: KeyState;
  /** Claims are refused until this time on the store's clock (`null`: no hold, or it has passed). */
  readonly heldUntil: StoreTime | null;
  /** The live waiters of the key's queue, oldest first (see `queue.ts`). */
  readonly waiters: readonly QueuedWaiter[];
  /** The store's now when it answered. */
  readonly now: StoreTime;
}

/**
 * A submission made with a fenced write: recorded once per run id, atomically with the write (and checkpoint).
 * The replay lookup comes before the fence, so a worker retrying after its lease ended still learns that its
 * submission landed.
 */
export interface SubmissionCommand {
  /** The replay key (validated: a non-empty name). */
  readonly runId: string;
  /** SHA-256 (hex) of the payload's canonical JSON, computed before any I/O. */
  readonly digest: string;
  /** What a replay returns (validated JSON text), `null`: nothing. */
  readonly receiptJson: string | null;
  /**
   * Replays only to the grant that recorded the submission: another grant presenting the same run id gets the
   * fence's refusal (or `replay-conflict` when it is the current grant), never the stored receipt.
   */
  readonly bindToGrant: boolean;
}

/** What a fenced write may apply together with the user's write, in the same atomic step. */
export interface StoreFencedWriteOptions {
  /**
   * The grant's progress after this write (validated JSON text): saved exactly as `checkpoint` saves it,
   * atomically with the write, so a crash can never leave the write applied and the checkpoint old (or
   * the other way round). `undefined`: the checkpoint is left as it is.
   */
  readonly checkpointJson?: string;
  /** Record this submission with the write, once per run id (see `SubmissionCommand`). */
  readonly submission?: SubmissionCommand;
}

/** A fenced write whose callback refused itself (`context.refuse(code)`) after reading data in the fenced step: nothing applied. */
export interface WriteRefusal {
  readonly ok: false;
  readonly reason: 'write-refused';
  readonly key: string;
  /** The code the callback gave (for example `owner-inactive`). */
  readonly code: string;
  /** The callback's explanation, `null`: none. */
  readonly detail: string | null;
  /** The grant the write ran under (the fence held). */
  readonly token: bigint;
  readonly now: StoreTime;
}

/** The submission's run id was recorded before with the same payload: nothing was written now. */
export interface SubmissionReplayed {
  readonly ok: false;
  readonly reason: 'replayed';
  readonly key: string;
  /** What was recorded, with the receipt to return. */
  readonly submission: SubmissionRecord;
  readonly now: StoreTime;
}

/**
 * The submission's run id was recorded with another payload, or (with `bindToGrant`) under another grant
 * than the current one presenting it: nothing was written.
 */
export interface ReplayConflict {
  readonly ok: false;
  readonly reason: 'replay-conflict';
  readonly key: string;
  /** The digest and grant presented now. */
  readonly expected: { readonly runId: string; readonly digest: string; readonly token: bigint };
  /** What the run id recorded. */
  readonly found: SubmissionRecord;
  readonly now: StoreTime;
}

/** The outcome of a fenced write: the write's value when the fence held, the refusal otherwise. */
export type FencedWriteOutcome<T> =
  | {
      readonly ok: true;
      readonly value: T;
      readonly token: bigint;
      /** The checkpoint saved with the write (`null` when the command carried none). */
      readonly checkpoint: CheckpointRecord | null;
      /** The submission recorded with the write; absent when the command carried none. */
      readonly submission?: SubmissionRecord;
      readonly now: StoreTime;
    }
  | FenceRefusal
  | WriteRefusal
  | SubmissionReplayed
  | ReplayConflict;

/**
 * What a store's `setKeyState` receives: values to set on a key (a `null` value removes the name) and,
 * optionally, a hold. Needs no lease: the writer is whoever owns the data the state describes.
 */
export interface SetKeyStateCommand {
  readonly key: string;
  /** Names to set (`null`: remove). Names not listed keep their values. */
  readonly values: Readonly<Record<string, string | null>>;
  /** Who changes the state (recorded in the `state-changed` ending of a grant it ends). */
  readonly by: string;
  /**
   * Hold the key back for this many ms from the store's now; `null` cancels a hold; absent keeps the hold as
   * it is.
   */
  readonly holdMs?: number | null;
}

/**
 * What `setKeyState` answers: the state and hold now, the names whose values changed, and the grant it ended
 * (`null`: the values were unchanged, or nothing was held; an expired grant is recorded `expired`).
 */
export interface SetKeyStateOutcome {
  readonly ok: true;
  readonly key: string;
  readonly state: KeyState;
  readonly heldUntil: StoreTime | null;
  /** Names whose values changed, in code-unit order (`[]`: nothing changed, the grant is kept). */
  readonly changed: readonly string[];
  /** The ending of the grant the change fenced, `null` when none. */
  readonly ended: Ending | null;
  readonly now: StoreTime;
}

/** What a store's `remove` receives: an operator deleting a key's record (state, checkpoint, submissions). */
export interface RemoveCommand {
  readonly key: string;
  /** Remove even while a live grant holds the key (its holder is then told `missing`). */
  readonly force: boolean;
  /** Remove only if the key's current token is this one (an operator acting on what a dashboard showed). */
  readonly expectedToken: bigint | null;
}

/** What `remove` answers: the record is gone (its last token and grant), or why not. */
export type RemoveOutcome =
  | {
      readonly ok: true;
      readonly key: string;
      /** The key's token when removed: every later grant's token is greater. */
      readonly token: bigint;
      /** The grant that held the key when it was removed (`force`), `null`: none. */
      readonly grant: GrantView | null;
      readonly now: StoreTime;
    }
  | {
      readonly ok: false;
      /** `missing`: no record; `held`: a live grant and no `force`; `superseded`: `expectedToken` is not current. */
      readonly reason: 'missing' | 'held' | 'superseded';
      readonly key: string;
      readonly token: bigint | null;
      readonly now: StoreTime;
    };

/** Why a token gate refused a write. */
export interface GateRefusal {
  readonly ok: false;
  readonly reason: 'stale-token' | 'key-mismatch';
  readonly resource: string;
  /** The lease key and token the write carried. */
  readonly expected: { readonly key: string; readonly token: bigint };
  /** The lease key and highest token that wrote the resource before. */
  readonly found: { readonly key: string; readonly token: bigint };
}

/**
 * The outcome of a gate write: the write's value, the gate's refusal (an older token or another key), or,
 * for a gate that checks the full fence in the lease store's backend, the fence's refusal.
 */
export type GateOutcome<T> = { readonly ok: true; readonly value: T; readonly token: bigint } | GateRefusal | FenceRefusal;

/** What a token gate remembers of a resource: the lease key and highest token that wrote it (`null`: nothing). */
export interface GateRecord {
  readonly resource: string;
  readonly found: { readonly key: string; readonly token: bigint } | null;
}

/**
 * What a gate's `reset` may require of the record it forgets: an operator who was shown a token resets only
 * that token. Without it, `reset` forgets whatever the gate records when it runs.
 */
export interface GateResetOptions {
  /** Forget the resource only if the gate still records this token for it. */
  readonly expectedToken?: bigint;
  /** And only if that token is of this lease key (needs `expectedToken`). @default any key */
  readonly expectedKey?: string;
}

/**
 * What a gate's `reset` answers: what it forgot (`found`, `null` when nothing was recorded), or, when the gate
 * no longer records the expected token (and key), `superseded` with what it records instead (`found`, `null`:
 * nothing), and the resource left as it was.
 */
export type GateResetOutcome =
  | { readonly ok: true; readonly resource: string; readonly found: GateRecord['found'] }
  | {
      readonly ok: false;
      readonly reason: 'superseded';
      readonly resource: string;
      /** The token (and key, `null`: any) the reset expected. */
      readonly expected: { readonly key: string | null; readonly token: bigint };
      readonly found: GateRecord['found'];
    };
