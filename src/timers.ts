/**
 * Timer functions (injectable for tests) and the limit of what `setTimeout` counts: shared by the renewal of
 * `withLease` and the waits of a claim with `wait`.
 */

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

/** The default timers: the global ones, looked up at each call (so fake timers installed later apply). */
export const SYSTEM_TIMERS: Timers = {
  setTimeout: (callback, ms) => globalThis.setTimeout(callback, ms),
  clearTimeout: (handle) => globalThis.clearTimeout(handle as ReturnType<typeof setTimeout>),
};
