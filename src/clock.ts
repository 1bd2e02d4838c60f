/**
 * Clocks. This is the only file where `Date.now()` and `performance.now()` may appear.
 *
 * Two kinds of time matter: the STORE's clock decides expiry (adapters read it inside their atomic
 * operation); the worker's MONOTONIC clock only measures how long ago a request was sent, to schedule
 * renewals conservatively from the store's expires-at.
 */

import { InvalidArgumentError } from './errors.js';
import { describe } from './validate.js';

/** A source of epoch milliseconds. */
export type Clock = () => number;

/** The machine's wall clock, for the memory store's default. */
export const systemClock: Clock = () => Date.now();

/** A monotonic clock in milliseconds, for measuring elapsed time on the worker. */
export const monotonicClock: Clock = () => performance.now();

/** A clock that moves only when told: for tests, demos and simulations. */
export interface ManualClock {
  (): number;
  /** Moves the clock forward by `ms` (a finite number >= 0; anything else is `InvalidArgumentError`). */
  advance(ms: number): void;
  /** Sets the clock to `epochMs` (a finite number; anything else is `InvalidArgumentError`). */
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
  let now = finiteMs(startMs, 'a manual clock starts at a finite number of epoch ms');
  const clock = (() => now) as ManualClock;
  clock.advance = (ms: number) => {
    const step = finiteMs(ms, 'a manual clock advances by a finite number of ms');
    if (step < 0) throw new InvalidArgumentError(`a manual clock only moves forward, got ${step}`);
    now += step;
  };
  clock.set = (epochMs: number) => {
    now = finiteMs(epochMs, 'a manual clock is set to a finite number of epoch ms');
  };
  return clock;
}

/** `value` when it is a finite number; otherwise `InvalidArgumentError` (a NaN time would expire nothing, ever). */
function finiteMs(value: unknown, expected: string): number {
  if (typeof value !== 'number' || !Number.isFinite(value)) throw new InvalidArgumentError(`${expected}, got ${describe(value)}`);
  return value;
}
