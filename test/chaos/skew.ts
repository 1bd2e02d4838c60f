/**
 * A worker clock that lies: it runs at a skewed rate and jumps by seconds at scheduled moments. Injected as
 * `createLeases({ monotonicClock })`, it corrupts only the worker's belief about its deadline; expiry is
 * decided by the store's clock, so the worst it may cause is a write the store refuses.
 */
import type { Random } from './prng.js';

/** How a worker's clock lies. */
export interface ClockSkew {
  /** Rate of the worker clock against real time (0.5: half speed, so deadlines seem further away). */
  readonly rate: number;
  /** At `atMs` after start, the clock's offset becomes `offsetMs` (negative: jumps back). */
  readonly jumps: ReadonlyArray<{ readonly atMs: number; readonly offsetMs: number }>;
}

/** A skewed clock; the jump timers are unref'd so they never keep the process alive. */
export function skewedClock(skew: ClockSkew): () => number {
  const start = performance.now();
  let offset = 0;
  for (const jump of skew.jumps) {
    setTimeout(() => {
      offset = jump.offsetMs;
    }, jump.atMs).unref();
  }
  return () => start + (performance.now() - start) * skew.rate + offset;
}

/** A random skew of several seconds for one worker over a run of `durationMs`. */
export function randomSkew(random: Random, durationMs: number): ClockSkew {
  const rate = random.pick([0.25, 0.5, 0.8, 1, 1.5, 3]);
  const jumps = [];
  for (let at = random.int(500, 2000); at < durationMs; at += random.int(1000, 4000)) {
    jumps.push({ atMs: at, offsetMs: random.int(-8000, 8000) });
  }
  return { rate, jumps };
}
