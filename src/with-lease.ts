/**
 * `withLease`: claim, renew in the background on a schedule derived from the store's expires-at, hand the
 * work an AbortSignal that fires as soon as loss is known (from the renewal, from a renew, checkpoint or
 * fenced write of the lease refused while `fn` runs, or from the renew a revoke notice of the store
 * triggers: `Renewal.listen`), always release at the end, and say truthfully how it
 * ended: completed, lost, or stopped by the caller's signal. Once the run is lost or stopped, the renewal in
 * flight and the final release are waited for until the grant's local deadline at most, so a store that
 * stopped answering cannot keep `withLease` from returning.
 */
import type { Clock } from './clock.js';
import { InvalidArgumentError, isLeaseLostError, LeaseLostError } from './errors.js';
import type { FenceRefusal } from './fence/types.js';
import type { ClaimRefusal } from './refusals.js';
import type { WaitedRefusal } from './waiting/refusal.js';
import { attachRun, runOf, type Lease } from './lease.js';
import type {
  ClaimOptions,
  ClaimResult,
  Leases,
  RunningLease,
  WaitedClaimResult,
  WithLeaseCompleted,
  WithLeaseLost,
  WithLeaseOptions,
  WithLeaseOutcome,
  WithLeaseStopped,
} from './leases-types.js';
import { Renewal, type RenewalSchedule } from './renewal.js';
import { MAX_TIMER_MS, SYSTEM_TIMERS, type Timers } from './timers.js';
import { DEFAULT_MAX_CHECKPOINT_BYTES, describe, serializeCheckpoint } from './validate.js';
import { attemptUnlessStopped } from './waiting/with-lease-claim.js';
import type { WaitOptions } from './waiting/wait-options.js';

/**
 * Tells the `withLease` run of `lease` (if any, and still running) that an operation on it was refused: its
 * signal aborts at once with a `LeaseLostError`. Called by `leases.ts` on refusals only, so it costs
 * nothing on success. An attribute mismatch is not a loss: the grant is still current.
 */
export function noticeRefusal(lease: Lease, refusal: FenceRefusal): void {
  if (refusal.reason === 'attribute-mismatch') return;
  runOf(lease)?.lose(new LeaseLostError(refusal));
}

/** Implements `Leases.withLease`. */
export function runWithLease<T>(
  leases: Leases,
  monotonic: Clock,
  key: string,
  fn: (lease: RunningLease, signal: AbortSignal) => Promise<T>,
  options: WithLeaseOptions,
  maxCheckpointBytes: number = DEFAULT_MAX_CHECKPOINT_BYTES,
): Promise<WithLeaseOutcome<T>> {
  // NOTE: without a wait, a plain claim; without claim options, none (`readOptions` then copies nothing).
  const claim = (wait: WaitOptions | undefined): Promise<ClaimResult | WaitedClaimResult> =>
    wait === undefined
      ? leases.claim<ClaimOptions>(key, hasClaimOptions(options) ? options : undefined)
      : leases.claim<ClaimOptions>(key, { ...options, wait });
  return runAcquired<T, ClaimRefusal | WaitedRefusal>(leases, monotonic, key, fn, options, maxCheckpointBytes, claim);
}

/**
 * `withLease`'s run around any way of taking the lease (`acquire`: a claim, a permit's acquire), given the wait to
 * use: `key` names the run when nothing was taken. The acquire's refusal is returned as the outcome.
 */
export async function runAcquired<T, R extends { readonly ok: false }>(
  leases: Leases,
  monotonic: Clock,
  key: string,
  fn: (lease: RunningLease, signal: AbortSignal) => Promise<T>,
  options: Omit<WithLeaseOptions, keyof ClaimOptions> & { readonly wait?: WaitOptions },
  maxCheckpointBytes: number,
  acquire: (wait: WaitOptions | undefined) => Promise<{ readonly ok: true; readonly lease: Lease } | R>,
): Promise<WithLeaseCompleted<T> | WithLeaseLost<T> | WithLeaseStopped<T> | R> {
  const renewAfterFraction = checkOptions(fn, options, maxCheckpointBytes);
  const external = options.signal;
  if (isAborted(external))
    return { ok: false, reason: 'stopped', key, lease: null, cause: external?.reason, lost: null, returned: null, released: false };
  const claimed = await attemptUnlessStopped(options, acquire);
  if (claimed === null)
    return { ok: false, reason: 'stopped', key, lease: null, cause: external?.reason, lost: null, returned: null, released: false };
  if (!claimed.ok) return claimed;
  const { lease } = claimed;
  const runKey = lease.key;
  const ttlMs = lease.expiresAt === null ? null : lease.ttlMs;
  const schedule =
    ttlMs === null
      ? null
      : {
          ttlMs,
          renewAfterFraction,
          safetyMarginMs: options.safetyMarginMs ?? Math.min(1000, ttlMs / 10),
          retryDelayMs: options.retryDelayMs ?? Math.min(250, ttlMs / 10),
        };
  const timers = options.timers ?? SYSTEM_TIMERS;
  const renewal = new Renewal(leases, lease, monotonic, timers, schedule);
  const { abort } = renewal;
  const stop = external === undefined ? null : (): void => renewal.lose(external.reason);
  if (stop !== null) external?.addEventListener('abort', stop, { once: true });
  attachRun(lease, renewal);
  // NOTE: the caller's signal may have aborted while the claim was in flight: stop before running fn.
  if (stop !== null && isAborted(external)) stop();
  // NOTE: what fn returned, and whether it did: two variables, not an object (the completed outcome needs none).
  let value: T | undefined;
  let returned = false;
  try {
    // NOTE: inside the try, so timers that throw still release the lease and detach the caller's signal.
    renewal.start();
    renewal.listen();
    if (!abort.aborted) {
      value = await runFn(fn, lease as RunningLease, renewal);
      returned = true;
    }
  } catch (error) {
    // NOTE: after the signal aborted, a rejection is the work stopping because of it (an AbortError, the
    // reason itself, a LeaseLostError from an ...OrThrow call); any other error is the work's own.
    if (!abort.aborted || !causedByAbort(error, abort.reason)) {
      const stopping = finish(renewal, external, stop);
      if (stopping !== undefined) await bounded(stopping, undefined, lease, schedule, monotonic, timers);
      const releasing = releaseQuietly(leases, lease, undefined);
      await (abort.aborted || stopping !== undefined ? bounded(releasing, false, lease, schedule, monotonic, timers) : releasing);
      throw error;
    }
  }
  const inFlight = finish(renewal, external, stop);
  if (inFlight !== undefined) await bounded(inFlight, undefined, lease, schedule, monotonic, timers);
  if (!abort.aborted) {
    const { finalCheckpoint } = options;
    // NOTE: the usual end (no renewal in flight) awaits the release itself: no `.then` for the applied flag.
    if (inFlight === undefined) {
      let released = false;
      try {
        released = (await leases.release(lease, finalCheckpoint === undefined ? undefined : { checkpoint: finalCheckpoint })).ok;
      } catch {
        // NOTE: as in `releaseQuietly`: an unreachable store must not mask the work's result.
      }
      return { ok: true, value: value as T, lease, lost: null, released };
    }
    // NOTE: a renewal still in flight when fn returned: the store may not be answering; bound the release too.
    const released = await bounded(releaseQuietly(leases, lease, finalCheckpoint), false, lease, schedule, monotonic, timers);
    return { ok: true, value: value as T, lease, lost: null, released };
  }
  const released = await bounded(releaseQuietly(leases, lease, undefined), false, lease, schedule, monotonic, timers);
  const reason = abort.reason;
  const settled = returned ? { value: value as T } : null;
  if (isLeaseLostError(reason)) return { ok: false, reason: 'lost', key: runKey, lease, lost: reason, returned: settled, released };
  return { ok: false, reason: 'stopped', key: runKey, lease, cause: reason, lost: null, returned: settled, released };
}

/**
 * Calls `fn`. One that declares exactly one parameter, `(lease) => ...`, is not handed the signal, so the
 * run makes one only if `fn` reads `lease.signal`; any other is handed it as its second argument.
 */
function runFn<T>(fn: (lease: RunningLease, signal: AbortSignal) => Promise<T>, lease: RunningLease, renewal: Renewal): Promise<T> {
  // NOTE: `fn.length` counts the parameters before the first default or rest one: `(lease, signal = x)` and
  // `(lease, ...rest)` count 1 and get no second argument (documented; `lease.signal` is the same signal).
  if (fn.length === 1) return (fn as (lease: RunningLease) => Promise<T>)(lease);
  return fn(lease, renewal.signal);
}

const isAborted = (signal: AbortSignal | undefined): boolean => signal?.aborted === true;

/**
 * Stops the renewal, so nothing renews or aborts after the release (a refusal reported later is ignored).
 * Returns the renewal in flight to wait for, if any.
 */
function finish(renewal: Renewal, external: AbortSignal | undefined, stop: (() => void) | null): Promise<void> | undefined {
  if (stop !== null) external?.removeEventListener('abort', stop);
  return renewal.stop();
}

/** Whether `error`, thrown by `fn` after its signal aborted with `reason`, is the work stopping because of it. */
function causedByAbort(error: unknown, reason: unknown): boolean {
  if (error === reason || isLeaseLostError(error)) return true;
  if (error instanceof Error && error.name === 'AbortError') return true;
  for (let cause = error instanceof Error ? error.cause : undefined, depth = 0; cause !== undefined && depth < 8; depth += 1) {
    if (cause === reason) return true;
    cause = cause instanceof Error ? cause.cause : undefined;
  }
  return false;
}

/**
 * Validates `fn` and the options before the claim (invariant 7), with the same error as every other bad input;
 * returns `renewAfterFraction` with its default.
 */
function checkOptions(fn: unknown, options: Omit<WithLeaseOptions, keyof ClaimOptions>, maxCheckpointBytes: number): number {
  if (typeof fn !== 'function') throw new InvalidArgumentError('withLease needs a function to run under the lease');
  if (typeof options !== 'object' || options === null) throw new InvalidArgumentError('withLease options must be an object');
  const fraction = options.renewAfterFraction ?? 1 / 3;
  if (typeof fraction !== 'number' || !(fraction > 0 && fraction < 1))
    throw new InvalidArgumentError(`renewAfterFraction must be a number between 0 and 1, got ${describe(fraction)}`);
  const { safetyMarginMs, retryDelayMs, timers, signal, finalCheckpoint } = options;
  if (safetyMarginMs !== undefined && !(typeof safetyMarginMs === 'number' && Number.isFinite(safetyMarginMs) && safetyMarginMs >= 0)) {
    throw new InvalidArgumentError(`safetyMarginMs must be a finite number of ms >= 0, got ${describe(safetyMarginMs)}`);
  }
  if (retryDelayMs !== undefined && !(typeof retryDelayMs === 'number' && Number.isFinite(retryDelayMs) && retryDelayMs > 0)) {
    throw new InvalidArgumentError(`retryDelayMs must be a finite number of ms > 0, got ${describe(retryDelayMs)}`);
  }
  if (
    timers !== undefined &&
    (typeof timers !== 'object' || timers === null || typeof timers.setTimeout !== 'function' || typeof timers.clearTimeout !== 'function')
  ) {
    throw new InvalidArgumentError('timers must be an object with setTimeout and clearTimeout functions');
  }
  if (signal !== undefined && !(signal instanceof AbortSignal)) throw new InvalidArgumentError('signal must be an AbortSignal');
  // NOTE: serialized now only to refuse a bad value before the claim; the release serializes it again.
  if (finalCheckpoint !== undefined && finalCheckpoint !== null) serializeCheckpoint(finalCheckpoint, maxCheckpointBytes);
  return fraction;
}

/**
 * Waits for `settling` as long as the run's grant can be relied on (`boundedByDeadline`); a lease without expiry
 * (`schedule: null`) waits for it whatever it takes. Once the run is lost or stopped (or while a renewal is still in
 * flight), a store that never answers (a partition, a frozen server: no reset, and no client timeout) must not keep
 * withLease from returning.
 */
function bounded<R>(
  settling: Promise<R>,
  fallback: R,
  lease: Lease,
  schedule: RenewalSchedule | null,
  monotonic: Clock,
  timers: Timers,
): Promise<R> {
  return schedule === null ? settling : boundedByDeadline(settling, fallback, lease, schedule.safetyMarginMs, monotonic, timers);
}

/**
 * Waits for `settling` until the grant's local deadline, and at least `graceMs` from now; then resolves
 * `fallback`. Past that deadline the grant has expired as far as this process can tell, so a reply still
 * awaited (a renewal, the final release) changes nothing it could rely on; it may still land later, and a
 * stale grant changes nothing then either.
 */
function boundedByDeadline<R>(
  settling: Promise<R>,
  fallback: R,
  lease: Lease,
  graceMs: number,
  monotonic: Clock,
  timers: Timers,
): Promise<R> {
  const waitMs = Math.min(Math.max(lease.localDeadline - monotonic(), graceMs), MAX_TIMER_MS);
  return new Promise((resolve) => {
    const handle = timers.setTimeout(() => resolve(fallback), waitMs);
    const settle = (value: R): void => {
      timers.clearTimeout(handle);
      resolve(value);
    };
    settling.then(settle, () => settle(fallback));
  });
}

/** Releases at the end of `withLease`; a lost lease or an unreachable store must not mask the work's result. */
function releaseQuietly(leases: Leases, lease: Lease, checkpoint: unknown): Promise<boolean> {
  try {
    return leases.release(lease, checkpoint === undefined ? undefined : { checkpoint }).then(isApplied, releaseFailed);
  } catch {
    return Promise.resolve(false);
  }
}

const isApplied = (outcome: { readonly ok: boolean }): boolean => outcome.ok;
const releaseFailed = (): boolean => false;

/** Whether `options` sets any option of the claim itself (the others are `withLease`'s own). */
const hasClaimOptions = (options: WithLeaseOptions): boolean =>
  options.ttlMs !== undefined ||
  options.runId !== undefined ||
  options.attributes !== undefined ||
  options.recovering !== undefined ||
  options.expect !== undefined;
