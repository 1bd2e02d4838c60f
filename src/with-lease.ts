/**
 * `withLease`: claim, renew in the background on a schedule derived from the store's expires-at, hand the
 * work an AbortSignal that fires as soon as loss is known, and always release at the end.
 */
import type { Clock } from './clock.js';
import { publishLeaseLost } from './events.js';
import { InvalidArgumentError, isStoreFailure, LeaseLostError, LeaseUnconfirmedError, type LeaseError } from './errors.js';
import type { ClaimHeld, ClaimRecoveryRequired } from './fence/operations.js';
import type { Lease } from './lease.js';
import type { ClaimOptions, Leases } from './leases.js';

/** Timer functions, injectable for tests. */
export interface Timers {
  setTimeout(callback: () => void, ms: number): unknown;
  clearTimeout(handle: unknown): void;
}

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
}

/** How `withLease` ended when it got the lease. */
export interface WithLeaseCompleted<T> {
  readonly ok: true;
  readonly value: T;
  readonly lease: Lease;
  /** Why the lease was lost while `fn` ran (the signal's reason), or `null` if it held to the end. */
  readonly lost: LeaseError | null;
  /** Whether the final release was confirmed by the store. */
  readonly released: boolean;
}

export type WithLeaseOutcome<T> = WithLeaseCompleted<T> | ClaimHeld | ClaimRecoveryRequired;

/** The background renewal of one lease, feeding an AbortController. */
class Renewal {
  readonly controller: AbortController = new AbortController();
  #renewTimer: unknown = null;
  #deadlineTimer: unknown = null;
  #inFlight: Promise<void> = Promise.resolve();
  #stopped = false;
  #lastFailure: unknown = undefined;

  constructor(
    private readonly leases: Leases,
    private readonly lease: Lease,
    private readonly monotonic: Clock,
    private readonly timers: Timers,
    private readonly ttlMs: number,
    private readonly renewAfterFraction: number,
    private readonly safetyMarginMs: number,
    private readonly retryDelayMs: number,
  ) {}

  start(): void {
    this.#armDeadline();
    this.#scheduleRenew();
  }

  /** Stops renewing and waits for a renewal in flight, so no renew can land after the release that follows. */
  async stop(): Promise<void> {
    this.#stopped = true;
    this.#clear();
    await this.#inFlight;
  }

  #clear(): void {
    if (this.#renewTimer !== null) this.timers.clearTimeout(this.#renewTimer);
    if (this.#deadlineTimer !== null) this.timers.clearTimeout(this.#deadlineTimer);
    this.#renewTimer = null;
    this.#deadlineTimer = null;
  }

  #lose(reason: LeaseError): void {
    if (this.controller.signal.aborted) return;
    this.#stopped = true;
    this.#clear();
    this.controller.abort(reason);
    publishLeaseLost(this.lease, reason);
  }

  #safeDeadline(): number {
    return this.lease.localDeadline - this.safetyMarginMs;
  }

  /** Fires at the safe deadline unless a renewal moves it first. */
  #armDeadline(): void {
    if (this.#deadlineTimer !== null) this.timers.clearTimeout(this.#deadlineTimer);
    const delay = Math.max(0, this.#safeDeadline() - this.monotonic());
    this.#deadlineTimer = this.timers.setTimeout(() => {
      this.#deadlineTimer = null;
      if (!this.#stopped && this.monotonic() >= this.#safeDeadline()) {
        this.#lose(new LeaseUnconfirmedError(this.lease.key, this.lease.token, { cause: this.#lastFailure }));
      } else if (!this.#stopped) {
        this.#armDeadline();
      }
    }, delay);
  }

  #scheduleRenew(delay?: number): void {
    if (this.#stopped) return;
    const remaining = this.lease.localDeadline - this.monotonic();
    const wait = delay ?? Math.max(0, remaining - this.ttlMs * (1 - this.renewAfterFraction));
    this.#renewTimer = this.timers.setTimeout(() => {
      this.#renewTimer = null;
      this.#inFlight = this.#renewOnce();
    }, wait);
  }

  async #renewOnce(): Promise<void> {
    if (this.#stopped) return;
    try {
      const outcome = await this.leases.renew(this.lease, { ttlMs: this.ttlMs });
      if (this.#stopped) return;
      if (!outcome.ok) {
        this.#lose(new LeaseLostError(outcome));
        return;
      }
      this.#lastFailure = undefined;
      this.#armDeadline();
      this.#scheduleRenew();
    } catch (error) {
      if (this.#stopped) return;
      if (!isStoreFailure(error)) {
        this.#lose(new LeaseUnconfirmedError(this.lease.key, this.lease.token, { cause: error }));
        return;
      }
      this.#lastFailure = error;
      const left = this.#safeDeadline() - this.monotonic();
      if (left <= 0) this.#lose(new LeaseUnconfirmedError(this.lease.key, this.lease.token, { cause: error }));
      else this.#scheduleRenew(Math.min(this.retryDelayMs, left));
    }
  }
}

/** Implements `Leases.withLease`. */
export async function runWithLease<T>(
  leases: Leases,
  monotonic: Clock,
  key: string,
  fn: (lease: Lease, signal: AbortSignal) => Promise<T>,
  options: WithLeaseOptions,
): Promise<WithLeaseOutcome<T>> {
  // NOTE: bad input is refused before the claim (invariant 7), with the same error as every other bad input.
  if (typeof fn !== 'function') throw new InvalidArgumentError('withLease needs a function to run under the lease');
  const fraction = options.renewAfterFraction ?? 1 / 3;
  if (!(fraction > 0 && fraction < 1)) throw new InvalidArgumentError(`renewAfterFraction must be between 0 and 1, got ${fraction}`);
  const { safetyMarginMs, retryDelayMs } = options;
  if (safetyMarginMs !== undefined && !(Number.isFinite(safetyMarginMs) && safetyMarginMs >= 0)) {
    throw new InvalidArgumentError(`safetyMarginMs must be a finite number of ms >= 0, got ${safetyMarginMs}`);
  }
  if (retryDelayMs !== undefined && !(Number.isFinite(retryDelayMs) && retryDelayMs > 0)) {
    throw new InvalidArgumentError(`retryDelayMs must be a finite number of ms > 0, got ${retryDelayMs}`);
  }
  const claimed = await leases.claim(key, options);
  if (!claimed.ok) return claimed;
  const { lease } = claimed;
  const ttlMs = lease.expiresAt === null ? null : lease.expiresAt - (lease.acquiredAt ?? lease.expiresAt);
  const timers: Timers = options.timers ?? {
    setTimeout: (callback, ms) => globalThis.setTimeout(callback, ms),
    clearTimeout: (handle) => globalThis.clearTimeout(handle as ReturnType<typeof setTimeout>),
  };
  const renewal =
    ttlMs === null
      ? null
      : new Renewal(
          leases,
          lease,
          monotonic,
          timers,
          ttlMs,
          fraction,
          options.safetyMarginMs ?? Math.min(1000, ttlMs / 10),
          options.retryDelayMs ?? Math.min(250, ttlMs / 10),
        );
  const signal = renewal?.controller.signal ?? new AbortController().signal;
  renewal?.start();
  try {
    const value = await fn(lease, signal);
    await renewal?.stop();
    const released = await releaseQuietly(leases, lease);
    return { ok: true, value, lease, lost: signal.aborted ? (signal.reason as LeaseError) : null, released };
  } catch (error) {
    await renewal?.stop();
    await releaseQuietly(leases, lease);
    throw error;
  }
}

/** Releases at the end of `withLease`; a lost lease or an unreachable store must not mask the work's result. */
async function releaseQuietly(leases: Leases, lease: Lease): Promise<boolean> {
  try {
    const outcome = await leases.release(lease);
    return outcome.ok;
  } catch {
    return false;
  }
}
