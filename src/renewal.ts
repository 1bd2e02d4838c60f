/**
 * The background renewal of one lease under `withLease`: renews on a schedule derived from the store's
 * expires-at and aborts the run as soon as loss is known (a refused renew, no renewal confirmed by the safe
 * deadline, a refusal that another operation on the lease reported through `lose`, or the refused renew
 * that a revoke notice triggered: `listen`).
 */
import { monotonicClock, type Clock } from './clock.js';
import { isLeaseLostError, isStoreFailure, LeaseLostError, LeaseUnconfirmedError, type LeaseError } from './errors.js';
import { publishLeaseLost } from './events.js';
import type { Lease, LeaseRun } from './lease.js';
import { LazyAbort } from './lazy-abort.js';
import type { Leases } from './leases-types.js';
import { MAX_TIMER_MS, SYSTEM_TIMERS, type Timers } from './timers.js';

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

/**
 * Renewals started on the system timers whose alarms are not armed yet (see `Renewal.start`), newest first: a
 * list threaded through the runs themselves, so a run joins and leaves it without allocating. NOTE: a `Set`
 * that every run joined and left kept growing and rehashing its table (~1.2 µs of a ~3.2 µs memory run).
 */
let firstUnarmed: Renewal | null = null;

/** Puts `renewal` on the unarmed list. */
function addUnarmed(renewal: Renewal): void {
  renewal.unarmedNext = firstUnarmed;
  if (firstUnarmed !== null) firstUnarmed.unarmedPrevious = renewal;
  firstUnarmed = renewal;
  renewal.unarmed = true;
}

/** Takes `renewal` off the unarmed list; whether it was on it. */
function removeUnarmed(renewal: Renewal): boolean {
  if (!renewal.unarmed) return false;
  renewal.unarmed = false;
  const { unarmedPrevious: previous, unarmedNext: next } = renewal;
  if (previous === null) firstUnarmed = next;
  else previous.unarmedNext = next;
  if (next !== null) next.unarmedPrevious = previous;
  renewal.unarmedPrevious = null;
  renewal.unarmedNext = null;
  return true;
}

/** The pending `armDue`: the `setTimeout` it was given to, its handle, and when the run it serves is due (monotonic ms). */
let armScheduled: { readonly by: unknown; readonly handle: unknown; readonly at: number } | null = null;
/** Overdue by more than this, a pending `armDue` is taken for lost: schedule another (arming twice is harmless). */
const ARM_LOST_AFTER_MS = 1_000;

/**
 * How long before its first alarm is due a run gets its own timers: they then fire exactly when due (a
 * timer armed at the due instant would fire a turn, at least 1 ms, late).
 */
const ARM_AHEAD_MS = 100;

/** Arms the runs whose first alarm is due within `ARM_AHEAD_MS`; schedules itself again for the others. */
function armDue(): void {
  armScheduled = null;
  let next = Number.POSITIVE_INFINITY;
  for (let renewal = firstUnarmed; renewal !== null; ) {
    const following: Renewal | null = renewal.unarmedNext;
    const dueInMs = renewal.firstAlarmInMs();
    if (dueInMs > ARM_AHEAD_MS) next = Math.min(next, dueInMs);
    else {
      removeUnarmed(renewal);
      renewal.arm();
    }
    renewal = following;
  }
  if (next !== Number.POSITIVE_INFINITY) scheduleArming(next);
}

/** Clears the pending `armDue`, if any (nothing is left to arm). */
function cancelArming(): void {
  if (armScheduled !== null && armScheduled.by === globalThis.setTimeout) SYSTEM_TIMERS.clearTimeout(armScheduled.handle);
  armScheduled = null;
}

/**
 * Makes sure an `armDue` is pending on the current global timers, `ARM_AHEAD_MS` before `inMs` from now. One
 * timer serves every run on the system timers: most runs end before their first renewal is due and never
 * set a timer of their own.
 */
function scheduleArming(inMs: number): void {
  const now = monotonicClock();
  const at = now + inMs;
  if (armScheduled !== null) {
    // NOTE: a pending call is lost when the timers it was given to were replaced (fake timers installed or
    // uninstalled drop their pending timers); a new one is scheduled on the current ones.
    const lost = armScheduled.by !== globalThis.setTimeout || now > armScheduled.at + ARM_LOST_AFTER_MS;
    if (!lost && armScheduled.at <= at) return;
    if (!lost) SYSTEM_TIMERS.clearTimeout(armScheduled.handle);
  }
  const delay = Math.min(Math.max(0, inMs - ARM_AHEAD_MS), MAX_TIMER_MS);
  armScheduled = { by: globalThis.setTimeout, handle: SYSTEM_TIMERS.setTimeout(armDue, delay), at };
}

/** A watch that failed leaves the run on its renewal schedule alone (`Renewal.listen`). */
const ignoreFailedWatch = (): void => undefined;

/** A settled promise: `SETTLED.then(job)` runs `job` as a microtask. */
const SETTLED: Promise<void> = Promise.resolve();

/**
 * The least time between two checks a revoke notice triggers (a run's own; at most one is in flight): a
 * notice is a hint anyone able to publish can send, so a flood of them costs a run at most ten renews a
 * second, while the first notice after a quiet spell is checked at once.
 */
export const NOTICE_CHECK_GAP_MS = 100;

/** Renews one lease in the background and turns every sign of loss into an abort of the run. */
export class Renewal implements LeaseRun {
  /** Whether the run is on the unarmed list, and its neighbours there (`addUnarmed`). @internal */
  unarmed = false;
  /** @internal */
  unarmedPrevious: Renewal | null = null;
  /** @internal */
  unarmedNext: Renewal | null = null;
  /** The run's abort, with its signal made on first read. */
  readonly abort: LazyAbort = new LazyAbort();
  /** Made when first armed: a run that ends before its first renewal is due (most do) makes neither. */
  #renewAlarm: Alarm | null = null;
  #deadlineAlarm: Alarm | null = null;
  #inFlight: Promise<void> | null = null;
  #stopped = false;
  #lastFailure: unknown = undefined;
  /** Ends the watch of revoke notices, once it is live. */
  #unwatch: (() => void) | null = null;
  /** The check a revoke notice triggered, in flight; a notice heard meanwhile sets `#checkAgain`. */
  #checking: Promise<void> | null = null;
  #checkAgain = false;
  #checkTimer: unknown = null;
  #lastCheckAt = Number.NEGATIVE_INFINITY;
  /** Whether `start`'s first microtask has run. */
  #hopped = false;

  /** `schedule: null` (a lease without expiry): nothing to renew, only reported losses and stops abort. */
  constructor(
    private readonly leases: Leases,
    private readonly lease: Lease,
    private readonly monotonic: Clock,
    private readonly timers: Timers,
    private readonly schedule: RenewalSchedule | null,
  ) {}

  /** The run's signal (see `Lease.signal`). */
  get signal(): AbortSignal {
    return this.abort.signal;
  }

  /**
   * Starts the schedule, right before `fn` is called. On the system timers the alarms are armed lazily, by one
   * timer shared by the runs in progress, due shortly before the earliest of their first alarms: a run that
   * ends before its first renewal is due (most do) sets no timer of its own, and a run whose `fn` settles at
   * once sets no timer at all. Injected timers are armed at once.
   */
  start(): void {
    if (this.schedule === null || this.#stopped) return;
    if (this.timers !== SYSTEM_TIMERS) {
      this.arm();
      return;
    }
    // NOTE: two microtasks from now, the run's `await` of an `fn` that settled at once (an async function
    // that awaits nothing: a short job on the memory store) has resumed and stopped the renewal: that run
    // joins no list and sets no timer (a setTimeout + clearTimeout per run was ~0.4 µs of a ~2.9 µs memory
    // run). Any other run joins the shared arming then, within this turn, before any timer can fire.
    // Promise jobs, not `queueMicrotask` (which wraps each callback in an AsyncResource: ~0.2 µs a run).
    SETTLED.then(this.#hop);
  }

  /** The first of the two microtasks `start` waits, then the second: `#join`. */
  readonly #hop = (): void => {
    if (this.#hopped) this.#join();
    else {
      this.#hopped = true;
      SETTLED.then(this.#hop);
    }
  };

  /**
   * Joins the runs the shared timer arms when their first alarm is due, for the same instant on the monotonic
   * clock as an alarm armed now: no renewal and no deadline moves.
   */
  #join(): void {
    if (this.#stopped) return;
    addUnarmed(this);
    try {
      scheduleArming(this.firstAlarmInMs());
    } catch (error) {
      // NOTE: in a microtask, where a throw would be uncaught: without its timers the run cannot hold the lease safely.
      this.lose(this.#unconfirmed(error));
    }
  }

  /** In how many ms (on the run's monotonic clock) its first alarm is due: the renewal, or the safe deadline if sooner. @internal */
  firstAlarmInMs(): number {
    const { schedule } = this;
    if (schedule === null) return Number.POSITIVE_INFINITY;
    // NOTE: one clock read for both (~50 ns each, and every withLease run asks once).
    const now = this.monotonic();
    const renewIn = this.lease.localDeadline - now - schedule.ttlMs * (1 - schedule.renewAfterFraction);
    return Math.min(renewIn, this.#safeDeadline(schedule) - now);
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
    const renewing = this.#inFlight;
    const checking = this.#checking;
    if (checking === null) return renewing ?? undefined;
    return renewing === null ? checking : Promise.all([renewing, checking]).then(() => undefined);
  }

  /**
   * Listens for revoke notices of the lease's key when the store sends them (`Store.watchRevoked`: a store
   * with a notification connection). A notice is only a hint: it triggers one renew, which the store
   * answers; a refusal (`revoked`, with its reason and by) aborts the run as any refused renew does, and a
   * grant still current is merely renewed, so a forged notice never aborts a live lease. A watch that fails
   * leaves the run on its renewal schedule alone.
   */
  listen(): void {
    const { store } = this.leases;
    if (this.#stopped || typeof store.watchRevoked !== 'function') return;
    let watching: Promise<() => void>;
    try {
      watching = Promise.resolve(store.watchRevoked(this.lease.key, () => this.#noticed()));
    } catch {
      return;
    }
    watching.then((end) => {
      if (!this.#stopped) {
        this.#unwatch = end;
        return;
      }
      try {
        end();
      } catch {
        // NOTE: as in `#clear`: a store's failing unsubscribe changes nothing for an ended run.
      }
    }, ignoreFailedWatch);
  }

  /** A revoke notice: checks at once, or (one check in flight, or one less than `NOTICE_CHECK_GAP_MS` ago) once more after it. */
  #noticed(): void {
    if (this.#stopped) return;
    if (this.#checking !== null || this.#checkTimer !== null) {
      this.#checkAgain = true;
      return;
    }
    const waitMs = this.#lastCheckAt + NOTICE_CHECK_GAP_MS - this.monotonic();
    if (waitMs > 0) {
      this.#checkTimer = this.timers.setTimeout(() => {
        this.#checkTimer = null;
        this.#check();
      }, waitMs);
      return;
    }
    this.#check();
  }

  /** One renew of the lease: a refusal reaches `lose` through `leases.renew` (`noticeRefusal`); a failure changes nothing. */
  #check(): void {
    if (this.#stopped) return;
    this.#lastCheckAt = this.monotonic();
    this.#checkAgain = false;
    let renewing: Promise<unknown>;
    try {
      renewing = this.leases.renew(this.lease);
    } catch {
      return;
    }
    const checking = renewing.then(
      () => undefined,
      () => undefined,
    );
    this.#checking = checking;
    void checking.then(() => {
      if (this.#checking === checking) this.#checking = null;
      if (this.#checkAgain) this.#noticed();
    });
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
    // NOTE: the last unarmed run to end clears the shared timer: no timer is left behind to keep the
    // process alive (runs that overlap share it; runs one after another that outlive their `fn`'s first
    // turn each set and clear it, and the others never join: `start`).
    if (removeUnarmed(this) && firstUnarmed === null) cancelArming();
    this.#renewAlarm?.clear();
    this.#deadlineAlarm?.clear();
    if (this.#checkTimer !== null) this.timers.clearTimeout(this.#checkTimer);
    this.#checkTimer = null;
    const unwatch = this.#unwatch;
    this.#unwatch = null;
    try {
      unwatch?.();
    } catch {
      // NOTE: a store's failing unsubscribe must not stop the run's end (its release follows).
    }
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
    this.#deadlineAlarm ??= new Alarm(this.timers, this.monotonic);
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
    this.#renewAlarm ??= new Alarm(this.timers, this.monotonic);
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
      this.#deadlineAlarm?.clear();
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
