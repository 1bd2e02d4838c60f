/**
 * Clocks. This is the only file where `Date.now()` and `performance.now()` may appear.
 *
 * Two kinds of time matter: the STORE's clock decides expiry (adapters read it inside their atomic
 * operation); the worker's MONOTONIC clock only measures how long ago a request was sent, to schedule
 * renewals conservatively from the store's expires-at.
 */

/** A source of epoch milliseconds. */
export type Clock = () => number;

/** The machine's wall clock, for the memory store's default. */
export const systemClock: Clock = () => Date.now();

/** A monotonic clock in milliseconds, for measuring elapsed time on the worker. */
export const monotonicClock: Clock = () => performance.now();

/** A clock that moves only when told: for tests, demos and simulations. */
export interface ManualClock {
  (): number;
  /** Moves the clock forward by `ms` (never backwards). */
  advance(ms: number): void;
  /** Sets the clock to `epochMs`. */
  set(epochMs: number): void;
}

/**
 * Creates a clock that moves only when told.
 * ```ts
 * const clock = createManualClock(0);
 * const store = createMemoryStore({ clock });
 * clock.advance(30_000); // every lease with a shorter TTL is now expired
 * ```
 */
export function createManualClock(startMs = 0): ManualClock {
  let now = startMs;
  const clock = (() => now) as ManualClock;
  clock.advance = (ms: number) => {
    if (!(ms >= 0)) throw new RangeError(`a manual clock only moves forward, got ${ms}`);
    now += ms;
  };
  clock.set = (epochMs: number) => {
    now = epochMs;
  };
  return clock;
}
