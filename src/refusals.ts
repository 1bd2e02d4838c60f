/**
 * The refusals of the lease API that no store answers as they are: a claim's (the store's, plus
 * `run-already-acquired`, decided by the shell from the store's `held`) and `check`'s. Types only, importing only
 * the pure core, so `describe.ts`, `errors.ts` and `waiting/` can name them without reaching the shell.
 */
import type { ClaimHeld, ClaimHeldBack, ClaimQueued, ClaimRecoveryRequired, ClaimStateMismatch } from './fence/operations.js';
import type { FenceRefusal, StoreTime } from './fence/types.js';

/**
 * A claim by the holder AND run id (not `null`) that already hold the key live: the same run asked twice (a
 * retried claim whose reply was lost, a duplicated job). Answered from the store's `held` refusal, so every
 * store answers the same; the live grant is the one described (its token and expiry). The handle of that grant
 * is with whoever received the first reply: restore it from `lease.export()`, or let it expire.
 */
export interface ClaimRunAlreadyAcquired {
  readonly ok: false;
  readonly reason: 'run-already-acquired';
  readonly key: string;
  readonly token: bigint;
  readonly holder: string;
  readonly runId: string;
  readonly acquiredAt: StoreTime;
  readonly expiresAt: StoreTime | null;
  readonly now: StoreTime;
}

/**
 * Why a claim was not granted: `held` by another grant, `recovery-required`, `held-back` until a time,
 * `state-mismatch` with the claim's `expect`, `queued` (others wait for the key first), or `run-already-acquired`
 * (this holder and run hold it already).
 */
export type ClaimRefusal = ClaimHeld | ClaimRecoveryRequired | ClaimHeldBack | ClaimStateMismatch | ClaimQueued | ClaimRunAlreadyAcquired;

/** The grant is current, with `remainingMs` of it left (`null`: it never expires). */
export interface CheckPassed {
  readonly ok: true;
  readonly key: string;
  readonly token: bigint;
  readonly expiresAt: StoreTime | null;
  readonly remainingMs: number | null;
  readonly now: StoreTime;
}

/** The grant is current but has less than `minTtlMs` left: renew before the side effect, or skip it. */
export interface CheckTtlInsufficient {
  readonly ok: false;
  readonly reason: 'ttl-insufficient';
  readonly key: string;
  readonly token: bigint;
  readonly expiresAt: StoreTime;
  /** What was left on the store's clock. */
  readonly remainingMs: number;
  readonly minTtlMs: number;
  readonly now: StoreTime;
}

/** What `check` answers: current with enough left, too little left, or the fence's refusal (expected vs found). */
export type CheckOutcome = CheckPassed | CheckTtlInsufficient | FenceRefusal;
