/**
 * The public types of the lease API (`Leases`, its options and results, `withLease`'s options and
 * outcomes), in a module of their own: the shell (leases.ts, with-lease.ts, renewal.ts, waiting/) imports
 * them, and they import nothing from the shell.
 */
import type { Clock } from './clock.js';
import type { LeaseError } from './errors.js';
import type {
  CheckpointOutcome,
  FencedWriteOutcome,
  GateOutcome,
  StoreInspection,
  RecoverOutcome,
  RecoveryAction,
  ReleaseOutcome,
  RenewOutcome,
  RemoveOutcome,
  RevokeOutcome,
  SetKeyStateOutcome,
} from './fence/operations.js';
import type { AbandonedRun, AddItemsOutcome, ClaimNextIdle, OnExpired, RemoveItemsOutcome } from './fence/claim-next.js';
import type { SemaphoreFull } from './fence/permits.js';
import type { Ending, LeaseAttributes, StoreTime } from './fence/types.js';
import type { CheckOutcome, ClaimRefusal } from './refusals.js';
import type { TokenGate } from './gate.js';
import type { Checkpoint, Lease, LeaseJson } from './lease.js';
import type { Store, WriteContextOf } from './store.js';
import type { Timers } from './timers.js';
import type { WaitedRefusal } from './waiting/refusal.js';
import type { WaitOptions } from './waiting/wait-options.js';

export type { CheckOutcome, CheckPassed, CheckTtlInsufficient, ClaimRefusal, ClaimRunAlreadyAcquired } from './refusals.js';

/** Options of `createLeases`. */
export interface LeasesOptions {
  /** This worker's holder id, recorded on every grant it takes. */
  readonly holder: string;
  /**
   * Default time to live of a claim, in ms; `null`: grants never expire unless revoked.
   * @default 30_000
   */
  readonly ttlMs?: number | null;
  /**
   * Largest checkpoint accepted, in UTF-8 bytes of its JSON text. Checked before any I/O.
   * @default 65_536
   */
  readonly maxCheckpointBytes?: number;
  /**
   * The worker's monotonic clock, used only to measure round trips and compute local safe deadlines.
   * @default performance.now
   */
  readonly monotonicClock?: Clock;
}

/** Options of `claim`, `claimOrThrow` and `withLease`. */
export interface ClaimOptions {
  /** Time to live in ms, or `null` for no expiry. @default the `Leases` default */
  readonly ttlMs?: number | null;
  /** A run id for this attempt (the seeds' `runId`). @default null */
  readonly runId?: string | null;
  /** Attributes bound to the grant that fenced operations may require (e.g. a requested model version). */
  readonly attributes?: LeaseAttributes;
  /** Claim a lease revoked with `requireRecovery`, promising to resolve its checkpoint. @default false */
  readonly recovering?: boolean;
  /**
   * Key-state values the claim requires (see `setKeyState`): every listed name must have this value (`null`:
   * the name must be absent), checked by the store before anything else, atomically with the grant. Refused
   * `state-mismatch` naming the first differing name (code-unit order), expected vs found. The grant is then
   * bound to the key's state: a later change of any value fences it (`state-changed`).
   * @default no requirement
   */
  readonly expect?: Readonly<Record<string, string | null>>;
  /**
   * Wait for a held key: claim again when the store says it was released or revoked, or when the holder's
   * expiry passes, until granted or `wait.timeoutMs` / `wait.signal` ends the wait (then the last refusal,
   * with `waitedMs`). See `docs/waiting.md`.
   * @default no waiting: one claim, the store's answer as it is
   */
  readonly wait?: WaitOptions;
  /**
   * Take the key ahead of the claims that wait for it (first come, first served across processes: a claim that
   * does not wait is refused `queued` while anybody waits). For a claim that must not wait behind others: an
   * operator's, a health check's. A waiting claim's own place is kept.
   * @default false
   */
  readonly jumpQueue?: boolean;
}

/** A granted claim: the lease handle plus what it inherited. */
export interface Granted {
  readonly ok: true;
  readonly lease: Lease;
  /** How the previous grant ended. */
  readonly previous: Ending | null;
  /** The previous holder's checkpoint, parsed, with its token. */
  readonly checkpoint: Checkpoint | null;
}

/** What `claim` answers: the granted lease, or why not (see `ClaimRefusal`). */
export type ClaimResult = Granted | ClaimRefusal;

/** What a claim with a `wait` option resolves with: the grant, or the last refusal with how long it waited. */
export type WaitedClaimResult = Granted | WaitedRefusal;

/** `claim`'s result for options `O`: a refusal says how long it waited when `O` has a `wait`. */
export type ClaimResultOf<O> = O extends { readonly wait: WaitOptions } ? WaitedClaimResult : ClaimResult;

/**
 * Options of `claimNext`: a claim's (without `recovering`), plus what to do with an item whose last grant expired
 * without a release.
 */
export interface ClaimNextOptions {
  /** Time to live in ms, or `null` for no expiry. @default the `Leases` default */
  readonly ttlMs?: number | null;
  /** A run id for this attempt. @default null */
  readonly runId?: string | null;
  /** Attributes bound to the grant that fenced operations may require (e.g. a model version). */
  readonly attributes?: LeaseAttributes;
  /**
   * Key-state values the item must have (see `ClaimOptions.expect`): items whose state differs are skipped (left
   * for other claimers), and the grant is bound to the state it was claimed under.
   * @default no requirement
   */
  readonly expect?: Readonly<Record<string, string | null>>;
  /**
   * An item whose last grant expired without a release (an abandoned run): `'take-over'` grants it at once with
   * the run's checkpoint (`abandoned` names the run); `'record-first'` grants it the same way but requires
   * recovery: nobody else takes the key until this holder resolves it with a checkpoint decision (its first
   * fenced write can record "run r7 abandoned" as a submission under `abandoned.runId`, with a checkpoint).
   * @default 'take-over'
   */
  readonly onExpired?: OnExpired;
  /**
   * Wait for an item: on `idle`, try again at `nextAt` (plus up to `jitterMs`) or after `pollMs`, whichever is
   * sooner (sets publish no release notifications: `pollMs` bounds how late a release or an added item is
   * noticed), until granted or `timeoutMs` / `signal` ends the wait (then the last `idle`, with `waitedMs`).
   * `recheckMs` is not used. See `docs/work-queues.md`.
   * @default no waiting: one claim-next, the store's answer as it is
   */
  readonly wait?: WaitOptions;
}

/** `claimNext` granted an item of the set: the lease on its key, as `claim`'s grant, plus the item's story. */
export interface GrantedNext extends Granted {
  readonly set: string;
  /** Since when the item had been available (the order it was granted in), on the store's clock. */
  readonly availableSince: StoreTime;
  /** The run that expired without a release and that this grant took over; `null` otherwise. */
  readonly abandoned: AbandonedRun | null;
  /**
   * True under `onExpired: 'record-first'` with an abandoned run: resolve it with a checkpoint decision (a fenced
   * write or checkpoint with a checkpoint, `recover`, or a release with a checkpoint).
   */
  readonly recoveryRequired: boolean;
}

/** What `claimNext` answers: the granted item, or `idle` with when one may become claimable (`nextAt`). */
export type ClaimNextResult = GrantedNext | ClaimNextIdle;

/** The last `idle` a waiting claim-next saw, with how long it waited and what ended the wait. */
export type WaitedIdle = ClaimNextIdle & {
  /** Ms from the call to the end of the wait (the worker's monotonic clock). */
  readonly waitedMs: number;
  /** What ended the wait: its `timeoutMs` passed, or its `signal` aborted. */
  readonly waitEnded: 'timeout' | 'aborted';
};

/** What a `claimNext` with a `wait` option resolves with: the grant, or the last `idle` with how long it waited. */
export type WaitedClaimNextResult = GrantedNext | WaitedIdle;

/** `claimNext`'s result for options `O`: an `idle` says how long it waited when `O` has a `wait`. */
export type ClaimNextResultOf<O> = O extends { readonly wait: WaitOptions } ? WaitedClaimNextResult : ClaimNextResult;

/**
 * Options of `acquirePermit`: the semaphore's `limit` (required: the acquirer's own, see `docs/semaphores.md`), a
 * claim's options (without `expect`), and waiting.
 */
export interface AcquirePermitOptions {
  /** At most this many live permits of the semaphore, this one included: an integer from 1 to 1000. */
  readonly limit: number;
  /** Time to live in ms, or `null` for no expiry. @default the `Leases` default */
  readonly ttlMs?: number | null;
  /** A run id for this attempt. @default null */
  readonly runId?: string | null;
  /** Attributes bound to the grant that fenced operations may require. */
  readonly attributes?: LeaseAttributes;
  /**
   * Take a permit blocked for recovery (revoked with `requireRecovery`), to resolve its checkpoint; plain acquires
   * skip such a permit.
   * @default false
   */
  readonly recovering?: boolean;
  /**
   * Wait for a permit: on `full`, try again when a permit from 1 to `limit` is released or revoked (the store's
   * release notifications, where it has them and `limit` is at most 64), at `nextAt` (plus up to `jitterMs`), or
   * after `recheckMs` when listening and no expiry says when (`pollMs` when not listening), until granted or
   * `timeoutMs` / `signal` ends the wait (then the last `full`, with `waitedMs`). Not first come, first served.
   * @default no waiting: one acquire, the store's answer as it is
   */
  readonly wait?: WaitOptions;
}

/** `acquirePermit` granted a permit: the lease on the permit's key, as `claim`'s grant, plus which permit it is. */
export interface GrantedPermit extends Granted {
  readonly semaphore: string;
  /** The permit's index, from 1 to `limit` (its key is `permitKey(semaphore, index)`). */
  readonly index: number;
  readonly limit: number;
  /** Live permits of the semaphore when it was granted, this one included. */
  readonly live: number;
}

/** What `acquirePermit` answers: the granted permit, or `full` with the live holders and when one may free (`nextAt`). */
export type AcquirePermitResult = GrantedPermit | SemaphoreFull;

/** The last `full` a waiting acquire saw, with how long it waited and what ended the wait. */
export type WaitedFull = SemaphoreFull & {
  /** Ms from the call to the end of the wait (the worker's monotonic clock). */
  readonly waitedMs: number;
  /** What ended the wait: its `timeoutMs` passed, or its `signal` aborted. */
  readonly waitEnded: 'timeout' | 'aborted';
};

/** What an `acquirePermit` with a `wait` option resolves with. */
export type WaitedAcquirePermitResult = GrantedPermit | WaitedFull;

/** `acquirePermit`'s result for options `O`: a `full` says how long it waited when `O` has a `wait`. */
export type AcquirePermitResultOf<O> = O extends { readonly wait: WaitOptions } ? WaitedAcquirePermitResult : AcquirePermitResult;

/** Options of `addItems`. */
export interface AddItemsOptions {
  /** Claim-next skips the new items until this many ms after the store's now (0 to `MAX_TTL_MS`). @default 0 */
  readonly notBeforeMs?: number;
}

/** Options of a fenced operation (`checkpoint`). */
export interface FenceOptions {
  /** Attributes the grant must have been bound with, checked atomically with the operation. */
  readonly attributes?: LeaseAttributes;
}

/** Options of `fencedWrite` and `fencedWriteOrThrow`. */
export interface FencedWriteOptions extends FenceOptions {
  /**
   * The lease's progress after this write (any JSON value), saved in the same atomic step as the write:
   * both apply or neither does, so a worker that crashes can never leave its data written and its
   * checkpoint behind (the next holder would repeat the step). Omitted: the checkpoint is left as it is.
   */
  readonly checkpoint?: unknown;
  /**
   * Record this write as a submission, once per run id: the same run's retry with an equal payload is answered
   * `replayed` (nothing written), with another payload `replay-conflict`. See `Submission`.
   */
  readonly submission?: Submission;
}

/**
 * An idempotent submission made with a fenced write. The payload is digested (SHA-256 of its canonical JSON:
 * object keys sorted at every depth) before any I/O; the store keeps the newest `SUBMISSION_RETENTION` (32)
 * submissions per key. The replay lookup comes before the fence, so a worker whose reply was lost, retrying
 * after its lease ended, still learns that its submission landed.
 */
export interface Submission {
  /** What is submitted (any JSON value; checked like a checkpoint, and at most `maxCheckpointBytes`). */
  readonly payload: unknown;
  /** The replay key. @default the lease's run id (required: a lease without one must pass it) */
  readonly runId?: string;
  /** What a replay returns, as `submission.receiptJson` (any JSON value, size-checked like a checkpoint). @default null */
  readonly receipt?: unknown;
  /**
   * Replay only to the grant that recorded it: another grant presenting the same run id gets the fence's
   * refusal (or `replay-conflict` when it holds the key now), never the stored receipt. @default false
   */
  readonly bindToGrant?: boolean;
}

/** Options of `release`. */
export interface ReleaseOptions {
  /** Leave a final checkpoint (any JSON), or `null` to clear the checkpoint. Omitted: keep it. */
  readonly checkpoint?: unknown;
  /**
   * Hold the key back for this many ms from the store's now (a retry schedule: 6 h, 24 h, ...): claims are
   * refused `held-back` until then (a waiting claim waits for it). A positive integer up to `MAX_TTL_MS`.
   * @default no hold (a hold set by `setKeyState` is kept)
   */
  readonly holdMs?: number;
}

/** Options of `setKeyState`. */
export interface SetKeyStateOptions {
  /**
   * Hold the key back for this many ms from the store's now (a positive integer up to `MAX_TTL_MS`); `null`
   * cancels a hold. @default the hold is kept as it is
   */
  readonly holdMs?: number | null;
  /** Who changes the state (recorded in the `state-changed` ending of a grant it fences). @default the holder id */
  readonly by?: string;
}

/** Options of `remove`: an operator deleting a key's record. */
export interface RemoveOptions {
  /** Remove even while a live grant holds the key (its holder is then refused `missing`). @default false */
  readonly force?: boolean;
  /** Remove only if this token is the key's current one (what a dashboard showed). */
  readonly expectedToken?: bigint;
}

/** Options of `check`. */
export interface CheckOptions {
  /** At least this many ms of the grant must be left on the store's clock. @default 0 */
  readonly minTtlMs?: number;
  /** Attributes the grant must have been bound with. */
  readonly attributes?: LeaseAttributes;
}

/** Options of `revoke`: an operator's force-release. */
export interface RevokeOptions {
  /** Why: shown to the revoked holder in its refusal and to the next claimer. */
  readonly reason: string;
  /** Who revoked. @default 'operator' */
  readonly by?: string;
  /** Refuse plain claims until a `recovering` claim resolves the kept checkpoint. @default false */
  readonly requireRecovery?: boolean;
  /** Revoke only if this token is the current grant. */
  readonly expectedToken?: bigint;
}

/** An inspection with the checkpoint parsed. */
export interface LeaseInspection extends Omit<StoreInspection, 'checkpoint'> {
  readonly checkpoint: Checkpoint | null;
}

/** The lease API, bound to one store and one holder. */
export interface Leases<S extends Store = Store> {
  readonly store: S;
  readonly holder: string;
  /**
   * Grants `key` if it is new, released, expired or revoked; otherwise says who holds it or that a recovery
   * is pending. With `options.wait`, waits for a held key (see `ClaimOptions.wait`).
   */
  // NOTE: the mapped type makes an option `claim` does not know a type error (the generic would accept it).
  claim<O extends ClaimOptions = ClaimOptions>(
    key: string,
    options?: O & { readonly [K in Exclude<keyof O, keyof ClaimOptions>]?: never },
  ): Promise<ClaimResultOf<O>>;
  /** `claim`, throwing `LeaseBusyError` (with `waitedMs`) or `RecoveryRequiredError` for a refusal. */
  claimOrThrow(key: string, options?: ClaimOptions): Promise<Lease>;
  /** Extends the grant by `options.ttlMs`, by default the lease's own TTL (`lease.ttlMs`), from the store's now. */
  renew(lease: Lease, options?: { readonly ttlMs?: number | null }): Promise<RenewOutcome>;
  /** `renew` that throws `LeaseLostError` when the grant is no longer current or has expired. */
  renewOrThrow(lease: Lease, options?: { readonly ttlMs?: number | null }): Promise<void>;
  /** Saves the holder's progress (any JSON value) under the fence, stamped with the lease's token. */
  checkpoint(lease: Lease, value: unknown, options?: FenceOptions): Promise<CheckpointOutcome>;
  /** `checkpoint` that throws `LeaseLostError` when the fence refuses. */
  checkpointOrThrow(lease: Lease, value: unknown, options?: FenceOptions): Promise<void>;
  /** Runs `write` only if the grant is current on the store's clock, atomically with that check (and with `options.checkpoint`). */
  fencedWrite<T>(
    lease: Lease,
    write: (context: WriteContextOf<S>) => T | Promise<T>,
    options?: FencedWriteOptions,
  ): Promise<FencedWriteOutcome<T>>;
  /** `fencedWrite` that returns the callback's value or throws `LeaseLostError`. */
  fencedWriteOrThrow<T>(lease: Lease, write: (context: WriteContextOf<S>) => T | Promise<T>, options?: FencedWriteOptions): Promise<T>;
  /** Ends the grant; idempotent for the same grant, and a stale grant cannot release a newer one. */
  release(lease: Lease, options?: ReleaseOptions): Promise<ReleaseOutcome>;
  /**
   * Whether the grant is still current with at least `options.minTtlMs` left, on the store's clock: one
   * read-only round trip (the store's `inspect`), for use right before a side effect the fence cannot cover
   * (an external call). It proves token, holder, run, attributes and expiry; the secret is proven by the next
   * fenced operation. Writes nothing. Inside `withLease` a fence refusal ends the run (its signal aborts) as any
   * operation's does; `ttl-insufficient` does not.
   */
  check(lease: Lease, options?: CheckOptions): Promise<CheckOutcome>;
  /** `check` that throws `TtlInsufficientError` or `LeaseLostError`. */
  checkOrThrow(lease: Lease, options?: CheckOptions): Promise<void>;
  /**
   * Sets values of the key's state (`null` removes a name) and optionally its hold, needing no lease: the
   * writer owns the data the state describes (a content revision, the tier of a ramp). A changed value fences
   * the grant holding the key (`state-changed`, naming the value, expected vs found); unchanged values change
   * nothing and keep it.
   */
  setKeyState(key: string, values: Readonly<Record<string, string | null>>, options?: SetKeyStateOptions): Promise<SetKeyStateOutcome>;
  /** An operator's force-release: ends the current grant and moves the token on, so its holder is fenced at once. */
  revoke(key: string, options: RevokeOptions): Promise<RevokeOutcome>;
  /**
   * An operator deletes the key's record (grant, state, hold, checkpoint, submissions); refused `held` while a
   * grant is live unless `force`. The old grant's every operation then says `missing`; a key created again
   * never reissues an old token.
   */
  remove(key: string, options?: RemoveOptions): Promise<RemoveOutcome>;
  /**
   * Adds keys as items of `set` (a work queue; a key is an item of at most one set), due `notBeforeMs` from the
   * store's now. Adding an item again changes nothing. A key in another set: `in-another-set`, nothing added.
   * Needs a store with sets (`UnsupportedOperationError` otherwise, before any I/O).
   */
  addItems(set: string, keys: readonly string[], options?: AddItemsOptions): Promise<AddItemsOutcome>;
  /** Takes keys out of `set` (their records, grants and state stay). Needs a store with sets. */
  removeItems(set: string, keys: readonly string[]): Promise<RemoveItemsOutcome>;
  /**
   * Claims the item of `set` available longest, in one atomic step on the store: skips live grants, keys blocked
   * for recovery, held back, not yet due, or whose state differs from `options.expect`. `idle` (with `nextAt`)
   * when none is claimable; with `options.wait`, waits for one. Needs a store with sets. See `docs/work-queues.md`.
   */
  claimNext<O extends ClaimNextOptions = ClaimNextOptions>(
    set: string,
    options?: O & { readonly [K in Exclude<keyof O, keyof ClaimNextOptions>]?: never },
  ): Promise<ClaimNextResultOf<O>>;
  /**
   * Acquires a permit of the semaphore `semaphore`, in one atomic step on the store: granted while fewer than
   * `options.limit` permits are live, each permit a lease of its own (renew, checkpoint, fenced write, release,
   * revoke as any lease) with a token above every earlier token of the semaphore; `full` (the live holders, and
   * `nextAt`) otherwise; with `options.wait`, waits for one. Needs a store with semaphores. See `docs/semaphores.md`.
   */
  acquirePermit<O extends AcquirePermitOptions>(
    semaphore: string,
    options: O & { readonly [K in Exclude<keyof O, keyof AcquirePermitOptions>]?: never },
  ): Promise<AcquirePermitResultOf<O>>;
  /** `acquirePermit` that returns the grant or throws `SemaphoreFullError` (code `SEMAPHORE_FULL`). */
  acquirePermitOrThrow(semaphore: string, options: AcquirePermitOptions): Promise<GrantedPermit>;
  /**
   * `withLease` on a permit: acquires one (waiting with `options.wait`), renews it in the background, runs `fn`,
   * always releases. A `full` answer is returned as the outcome, as `withLease` returns a claim's refusal.
   */
  withPermit<T>(
    semaphore: string,
    fn: (lease: RunningLease, signal: AbortSignal) => Promise<T>,
    options: WithPermitOptions,
  ): Promise<WithPermitOutcome<T>>;
  /** Resolves the checkpoint the new grant inherited (`resume` or `discard`), lifting a pending recovery. */
  recover(lease: Lease, action: RecoveryAction): Promise<RecoverOutcome>;
  /** Everything about `key` except the secret, with the store's now. */
  inspect(key: string): Promise<LeaseInspection>;
  /**
   * Writes through a token gate, handing it the lease's full fence (a gate in the lease store's backend checks
   * the grant itself). `gateWriteOrThrow` throws `GateRefusedError` for a gate's refusal, `LeaseLostError` for
   * the fence's.
   */
  gateWrite<C, T>(gate: TokenGate<C>, resource: string, lease: Lease, write: (context: C) => T | Promise<T>): Promise<GateOutcome<T>>;
  /** `gateWrite` that returns the callback's value or throws `GateRefusedError` / `LeaseLostError`. */
  gateWriteOrThrow<C, T>(gate: TokenGate<C>, resource: string, lease: Lease, write: (context: C) => T | Promise<T>): Promise<T>;
  /**
   * Claims, renews in the background, runs `fn`, always releases. See `WithLeaseOptions`. `fn` gets the run's
   * signal as its second argument, and as `lease.signal` (made only when read: a one-parameter `fn` that
   * never reads it costs the run no AbortSignal).
   */
  withLease<T>(
    key: string,
    fn: (lease: RunningLease, signal: AbortSignal) => Promise<T>,
    options?: WithLeaseOptions,
  ): Promise<WithLeaseOutcome<T>>;
  /**
   * Rebuilds a handle from `lease.export()` (for example in another process). The JSON must carry the
   * secret: `JSON.stringify(lease)` leaves it out, so restoring that is refused.
   */
  restore(json: LeaseJson): Lease;
}

/** Options of `withPermit`: every `acquirePermit` option, plus `withLease`'s renewal schedule and stop signal. */
export interface WithPermitOptions extends AcquirePermitOptions, Omit<WithLeaseOptions, keyof ClaimOptions> {}

/**
 * How `withPermit` ended: `full` (with `waitedMs` when it waited), or what happened to the work under the permit
 * (as `withLease`'s; `key` is the permit's key, or the semaphore's name when nothing was acquired).
 */
export type WithPermitOutcome<T> = WithLeaseCompleted<T> | WithLeaseLost<T> | WithLeaseStopped<T> | SemaphoreFull | WaitedFull;

/** Options of `withLease`: every claim option, plus the renewal schedule and a stop signal. */
export interface WithLeaseOptions extends ClaimOptions {
  /**
   * Renew once this fraction of the grant's validity has passed (measured on the worker's monotonic clock
   * from when the previous claim or renew was sent, which is conservative).
   * @default 1 / 3
   */
  readonly renewAfterFraction?: number;
  /**
   * Abort this many ms before the local deadline when no renewal has been confirmed by then.
   * @default the smaller of 1000 and a tenth of the TTL
   */
  readonly safetyMarginMs?: number;
  /**
   * Delay between renewal attempts after the store was unreachable.
   * @default the smaller of 250 and a tenth of the TTL
   */
  readonly retryDelayMs?: number;
  /** Timer functions. @default globalThis.setTimeout / clearTimeout */
  readonly timers?: Timers;
  /**
   * Stops the work from outside (for example on SIGTERM): `fn`'s signal aborts with this signal's reason,
   * the lease is released once `fn` settles, and the outcome is `stopped`. Already aborted: nothing is claimed.
   * @default none
   */
  readonly signal?: AbortSignal;
  /**
   * The checkpoint decision of the final release when `fn` completed with the lease held: `undefined` keeps
   * the checkpoint, `null` clears it, any other JSON value replaces it. When `fn` threw, was stopped or lost
   * the lease, the checkpoint is always kept (it is the progress the next holder resumes from).
   * @default undefined (keep)
   */
  readonly finalCheckpoint?: unknown;
}

/** `fn` returned with the lease held to the end. */
export interface WithLeaseCompleted<T> {
  readonly ok: true;
  readonly value: T;
  readonly lease: Lease;
  /** Always `null` here; set on `WithLeaseLost`. */
  readonly lost: null;
  /** Whether the final release was confirmed by the store. */
  readonly released: boolean;
}

/**
 * The lease was lost while `fn` ran: a renew was refused, no renewal was confirmed before the safe deadline,
 * or a renew, checkpoint or fenced write of the lease inside `fn` was refused. Writes `fn` made through
 * `fencedWrite` before the loss landed; none after it did.
 */
export interface WithLeaseLost<T> {
  readonly ok: false;
  readonly reason: 'lost';
  readonly key: string;
  readonly lease: Lease;
  /** Why: a `LeaseLostError` (with the store's refusal) or a `LeaseUnconfirmedError`; also the signal's reason. */
  readonly lost: LeaseError;
  /** What `fn` returned if it still returned after the loss; `null` when it rejected because of it. */
  readonly returned: { readonly value: T } | null;
  /** Whether the final release was confirmed (normally `false`: the grant is gone). */
  readonly released: boolean;
}

/** The caller's `signal` aborted: `fn` was told to stop (or never started) and the lease was released. */
export interface WithLeaseStopped<T> {
  readonly ok: false;
  readonly reason: 'stopped';
  readonly key: string;
  /** The lease `fn` ran under; `null` when the signal had aborted before the claim (nothing was claimed). */
  readonly lease: Lease | null;
  /** The caller's signal's reason. */
  readonly cause: unknown;
  readonly lost: null;
  /** What `fn` returned if it returned after the stop; `null` when it rejected because of it, or never ran. */
  readonly returned: { readonly value: T } | null;
  /** Whether the final release was confirmed. */
  readonly released: boolean;
}

/**
 * How `withLease` ended: the claim's refusal (with `waitedMs` when it waited), or what happened to the work
 * under the lease. With `wait`, the run's `signal` also ends the wait: the outcome is then `stopped`.
 */
export type WithLeaseOutcome<T> = WithLeaseCompleted<T> | WithLeaseLost<T> | WithLeaseStopped<T> | ClaimRefusal | WaitedRefusal;

/**
 * A lease handle inside `withLease`: `lease.signal` is the run's signal (made on first read; see
 * `Lease.signal`).
 */
export interface RunningLease extends Lease {
  /** The run's signal: aborts as soon as the lease is known lost or the run is stopped. */
  readonly signal: AbortSignal;
}
