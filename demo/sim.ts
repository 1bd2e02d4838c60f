/**
 * A tiny discrete-event simulation. Simulated time IS the memory store's manual clock: the loop pops the
 * earliest event, moves the clock to it, runs it, and lets every promise it started settle before the next.
 * Nothing sleeps for real, so a fleet's hour runs in milliseconds, and a seed replays the same hour.
 */
import type { Timers } from '../src/timers.js';
import { createManualClock, type ManualClock } from '../src/adapters/memory/index.js';

/** A seeded pseudo-random source (mulberry32): the only source of chance in the demo. */
export interface Random {
  /** A float in [0, 1). */
  next(): number;
  /** An integer in [min, max]. */
  int(min: number, max: number): number;
  /** `true` with probability `p`. */
  chance(p: number): boolean;
}

/** Creates a seeded pseudo-random source. */
export function createRandom(seed: number): Random {
  let state = seed >>> 0;
  const next = (): number => {
    state = (state + 0x6d2b79f5) >>> 0;
    let t = state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
  return {
    next,
    int: (min, max) => min + Math.floor(next() * (max - min + 1)),
    chance: (p) => next() < p,
  };
}

interface SimEvent {
  readonly at: number;
  readonly seq: number;
  readonly run: () => void;
  cancelled: boolean;
}

/** Simulated time, chance and processes. */
export interface Simulation {
  /** The store's clock, moved only by the event loop. */
  readonly clock: ManualClock;
  readonly random: Random;
  /** Milliseconds since the simulation started. */
  elapsed(): number;
  /** Resolves after `ms` of simulated time. */
  sleep(ms: number): Promise<void>;
  /** Timers on simulated time, for `withLease({ timers })`. */
  readonly timers: Timers;
  /** Starts a simulated process; an unexpected error ends the demo with that error. */
  spawn(process: () => Promise<void>): void;
  /** Runs events until none is left. */
  run(): Promise<void>;
}

/** Lets every pending promise settle: setImmediate runs only once the microtask queue is empty. */
const settle = (): Promise<void> => new Promise((resolve) => setImmediate(resolve));

/** Creates a simulation starting at `startMs` (epoch ms on the store's clock). */
export function createSimulation(seed: number, startMs: number): Simulation {
  const clock = createManualClock(startMs);
  const queue: SimEvent[] = [];
  const crashes: unknown[] = [];
  let seq = 0;

  const schedule = (delayMs: number, run: () => void): SimEvent => {
    const event: SimEvent = { at: clock() + Math.max(0, delayMs), seq: seq++, run, cancelled: false };
    queue.push(event);
    return event;
  };

  /** The earliest event; ties go to the one scheduled first, so every run of a seed is the same. */
  const takeNext = (): SimEvent | undefined => {
    let best = 0;
    for (let i = 1; i < queue.length; i++) {
      const [a, b] = [queue[i]!, queue[best]!];
      if (a.at < b.at || (a.at === b.at && a.seq < b.seq)) best = i;
    }
    return queue.splice(best, 1)[0];
  };

  return {
    clock,
    random: createRandom(seed),
    elapsed: () => clock() - startMs,
    sleep: (ms) => new Promise((resolve) => void schedule(ms, resolve)),
    timers: {
      setTimeout: (callback, ms) => schedule(ms, callback),
      clearTimeout: (handle) => {
        (handle as SimEvent).cancelled = true;
      },
    },
    spawn(process) {
      schedule(0, () => void process().catch((error: unknown) => crashes.push(error)));
    },
    async run() {
      for (let event = takeNext(); event !== undefined; event = takeNext()) {
        if (event.cancelled) continue;
        clock.set(Math.max(clock(), event.at));
        event.run();
        await settle();
        if (crashes.length > 0) throw crashes[0];
      }
    },
  };
}
