/**
 * The background renewal of one lease under `withLease`: renews on a schedule derived from the store's
 * expires-at and aborts its AbortController as soon as loss is known (a refused renew, no renewal confirmed
 * by the safe deadline, or a refusal that another operation on the lease reported through `lose`).
 */
import type { Clock } from './clock.js';
import { isLeaseLostError, isStoreFailure, LeaseLostError, LeaseUnconfirmedError, type LeaseError } from './errors.js';
import { publishLeaseLost } from './events.js';
import type { Lease } from './lease.js';
import type { Leases } from './leases.js';

/** Timer functions, injectable for tests. */
export interface Timers {
  /** Schedules `callback` after `ms` milliseconds; returns a handle for `clearTimeout`. */
  setTimeout(callback: () => void, ms: number): unknown;
  /** Cancels a callback scheduled by `setTimeout`. */
  clearTimeout(handle: unknown): void;
}

/**
 * The longest delay `setTimeout` counts (2^31 - 1 ms, about 24.8 days); a longer one fires at once, which
 * for a long TTL would renew in a tight loop.
 */
export const MAX_TIMER_MS = 2_147_483_647;

/** When a renewal renews and gives up, from `WithLeaseOptions` and the lease's TTL. */
export interface RenewalSchedule {
  readonly ttlMs: number;
  readonly renewAfterFraction: number;
  readonly safetyMarginMs: number;
  readonly retryDelayMs: number;
}

/** One timer at a time that fires at a monotonic instant, however far away: long waits go in clamped steps. */
class Alarm {
  #handle: unknown = null;

  constructor(
    private readonly timers: Timers,
    private readonly monotonic: Clock,
  ) {}

  set(due: number, callback: () => void): void {
    this.clear();
    const delay = Math.max(0, due - this.monotonic());
    const step = Math.min(delay, MAX_TIMER_MS);
    this.#handle = this.timers.setTimeout(() => {
      this.#handle = null;
      // NOTE: re-armed only when the step was clamped, so short delays fire exactly as scheduled.
      if (step < delay) this.set(due, callback);
      else callback();
    }, step);
  }

  clear(): void {
    if (this.#handle !== null) this.timers.clearTimeout(this.#handle);
    this.#handle = null;
  }
}

/** Renews one lease in the background and turns every sign of loss into an abort of `controller`. */
export class Renewal {
  readonly controller: AbortController = new AbortController();
  readonly #renewAlarm: Alarm;
  readonly #deadlineAlarm: Alarm;
  #inFlight: Promise<void> | null = null;
  #stopped = false;
  #lastFailure: unknown = undefined;

  /** `schedule: null` (a lease without expiry): nothing to renew, only reported losses and stops abort. */
  constructor(
    private readonly leases: Leases,
    private readonly lease: Lease,
    private readonly monotonic: Clock,
    timers: Timers,
    private readonly schedule: RenewalSchedule | null,
  ) {
    this.#renewAlarm = new Alarm(timers, monotonic);
    this.#deadlineAlarm = new Alarm(timers, monotonic);
  }

  start(): void {
    if (this.schedule === null) return;
    this.#scheduleRenew(this.schedule);
  }

  /**
   * Stops renewing. Returns the renewal in flight (if any) to wait for, so no renew can land after the
   * release that follows; `undefined` when none is (the common case, which then costs no await).
   */
  stop(): Promise<void> | undefined {
    this.#stopped = true;
    this.#clear();
    return this.#inFlight ?? undefined;
  }

  /** The lease is lost (or the work must stop for `reason`): stop renewing and abort the signal once. */
  lose(reason: unknown): void {
    if (this.controller.signal.aborted) return;
    this.#stopped = true;
    this.#clear();
    this.controller.abort(reason);
    if (isLeaseLostError(reason)) publishLeaseLost(this.lease, reason);
  }

  #clear(): void {
    this.#renewAlarm.clear();
    this.#deadlineAlarm.clear();
  }

  #unconfirmed(cause: unknown): LeaseError {
    return new LeaseUnconfirmedError(this.lease.key, this.lease.token, { cause });
  }

  #safeDeadline(schedule: RenewalSchedule): number {
    return this.lease.localDeadline - schedule.safetyMarginMs;
  }

  /** Fires at the safe deadline unless a renewal moves it first. */
  #armDeadline(): void {
    const { schedule } = this;
    if (schedule === null) return;
    this.#deadlineAlarm.set(this.#safeDeadline(schedule), () => {
      if (this.#stopped) return;
      if (this.monotonic() >= this.#safeDeadline(schedule)) this.lose(this.#unconfirmed(this.#lastFailure));
      else this.#armDeadline();
    });
  }

  /**
   * Arms the renew alarm. The deadline alarm is armed only from the moment a renewal is due (it then covers
   * the renewal in flight and its retries), or now if the renewal is due no earlier than the safe deadline:
   * a run shorter than a third of its TTL sets one timer, not two.
   */
  #scheduleRenew(schedule: RenewalSchedule, delay?: number): void {
    if (this.#stopped) return;
    const now = this.monotonic();
    const wait = delay ?? Math.max(0, this.lease.localDeadline - now - schedule.ttlMs * (1 - schedule.renewAfterFraction));
    const due = now + wait;
    if (due >= this.#safeDeadline(schedule)) this.#armDeadline();
    this.#renewAlarm.set(due, () => {
      // NOTE: armed before the renewal is sent; past due (a blocked event loop), it fires on the next turn
      // unless the renewal is confirmed first, as the store judges it.
      this.#armDeadline();
      const renewing = this.#renewOnce(schedule);
      this.#inFlight = renewing;
      const settled = (): void => {
        if (this.#inFlight === renewing) this.#inFlight = null;
      };
      // NOTE: forgotten once settled either way; `stop()` hands an unsettled one to withLease to await.
      void renewing.then(settled, settled);
    });
  }

  async #renewOnce(schedule: RenewalSchedule): Promise<void> {
    if (this.#stopped) return;
    try {
      const outcome = await this.leases.renew(this.lease, { ttlMs: schedule.ttlMs });
      if (this.#stopped) return;
      if (!outcome.ok) {
        this.lose(new LeaseLostError(outcome));
        return;
      }
      this.#lastFailure = undefined;
      // NOTE: confirmed: the next renewal is due before the new safe deadline, and arms it when it is.
      this.#deadlineAlarm.clear();
      this.#scheduleRenew(schedule);
    } catch (error) {
      if (this.#stopped) return;
      if (!isStoreFailure(error)) {
        this.lose(this.#unconfirmed(error));
        return;
      }
      this.#lastFailure = error;
      const left = this.#safeDeadline(schedule) - this.monotonic();
      if (left <= 0) this.lose(this.#unconfirmed(error));
      else this.#scheduleRenew(schedule, Math.min(schedule.retryDelayMs, left));
    }
  }
}
