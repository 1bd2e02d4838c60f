/**
 * The background renewal of one lease under `withLease`: renews on a schedule derived from the store's
 * expires-at and aborts the run as soon as loss is known (a refused renew, no renewal confirmed by the safe
 * deadline, or a refusal that another operation on the lease reported through `lose`).
 */
import { monotonicClock, type Clock } from './clock.js';
import { isLeaseLostError, isStoreFailure, LeaseLostError, LeaseUnconfirmedError, type LeaseError } from './errors.js';
import { publishLeaseLost } from './events.js';
import type { Lease, LeaseRun } from './lease.js';
import { LazyAbort } from './lazy-abort.js';
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

/** The default timers: the global ones, looked up at each call (so fake timers installed later apply). */
export const SYSTEM_TIMERS: Timers = {
  setTimeout: (callback, ms) => globalThis.setTimeout(callback, ms),
  clearTimeout: (handle) => globalThis.clearTimeout(handle as ReturnType<typeof setTimeout>),
};

/** Renewals started on the system timers whose alarms are not armed yet (see `Renewal.start`). */
const unarmed = new Set<Renewal>();
/** The pending `armStarted`: the `setTimeout` it was given to and when (monotonic ms); `null`: none. */
let armScheduled: { readonly by: unknown; readonly at: number } | null = null;
/** Longer than this and a pending `armStarted` is taken for lost: schedule another (arming twice is harmless). */
const ARM_LOST_AFTER_MS = 1_000;

/** Arms the alarms of every run started since the last call that is still running. */
function armStarted(): void {
  armScheduled = null;
  for (const renewal of unarmed) renewal.arm();
  unarmed.clear();
}

/** Makes sure an `armStarted` is pending on the current global timers. */
function scheduleArming(): void {
  const now = monotonicClock();
  // NOTE: a pending call is lost when the timers it was given to were replaced (fake timers installed or
  // uninstalled drop their pending timers); a new one is scheduled on the current ones.
  if (armScheduled !== null && armScheduled.by === globalThis.setTimeout && now - armScheduled.at <= ARM_LOST_AFTER_MS) return;
  armScheduled = { by: globalThis.setTimeout, at: now };
  SYSTEM_TIMERS.setTimeout(armStarted, 0);
}

/** Renews one lease in the background and turns every sign of loss into an abort of the run. */
export class Renewal implements LeaseRun {
  /** The run's abort, with its signal made on first read. */
  readonly abort: LazyAbort = new LazyAbort();
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
    private readonly timers: Timers,
    private readonly schedule: RenewalSchedule | null,
  ) {
    this.#renewAlarm = new Alarm(timers, monotonic);
    this.#deadlineAlarm = new Alarm(timers, monotonic);
  }

  /** The run's signal (see `Lease.signal`). */
  get signal(): AbortSignal {
    return this.abort.signal;
  }

  /**
   * Starts the schedule. On the system timers the alarms are armed lazily, by one timer shared by every
   * run started in the same turn of the event loop: a run that ends within that turn (the memory store,
   * a short `fn`) sets no timer of its own. Injected timers are armed at once.
   */
  start(): void {
    if (this.schedule === null || this.#stopped) return;
    if (this.timers !== SYSTEM_TIMERS) {
      this.arm();
      return;
    }
    // NOTE: the alarms are set for the due instants on the monotonic clock, so arming them a turn later
    // moves no renewal and no deadline; a timer cannot fire within the current turn anyway.
    unarmed.add(this);
    scheduleArming();
  }

  /** Arms the renew alarm (and the deadline alarm when it is due first) now. @internal */
  arm(): void {
    if (this.schedule !== null) this.#scheduleRenew(this.schedule);
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

  /**
   * The lease is lost (or the work must stop for `reason`): stop renewing and abort the run once. Nothing
   * after `stop()`: the run has ended.
   */
  lose(reason: unknown): void {
    if (this.#stopped) return;
    this.#stopped = true;
    this.#clear();
    this.abort.abort(reason);
    if (isLeaseLostError(reason)) publishLeaseLost(this.lease, reason);
  }

  #clear(): void {
    unarmed.delete(this);
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
