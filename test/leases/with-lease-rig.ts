/**
 * A deterministic rig for `withLease`: fake timers drive both the worker's monotonic clock and the memory
 * store's clock (the store's can jump ahead on its own: skew), and the store sits behind a wrapper that can
 * go down, add latency to renewals, and records when each call was made. The store sends holders no
 * revoke notices (`watchRevoked`) unless `revokeNotices` is set, so most tests see the renewal and the
 * refusals alone.
 */
import { vi } from 'vitest';
import { createMemoryStore, type MemoryStore } from '../../src/adapters/memory/index.js';
import { StoreUnavailableError } from '../../src/errors.js';
import { createLeases } from '../../src/leases.js';
import type { Leases } from '../../src/leases-types.js';
import type { Timers } from '../../src/timers.js';
import { MEMORY_EPOCH } from '../adapters/memory-harness.js';

export const TTL_MS = 3_000;

export interface Rig {
  readonly store: MemoryStore;
  readonly worker: Leases<MemoryStore>;
  readonly rival: Leases<MemoryStore>;
  /** Fake ms since the rig started. */
  elapsed(): number;
  /** Moves the store's clock ahead of the worker's by `ms`. */
  skewStore(ms: number): void;
  /** While true, every store call throws `StoreUnavailableError` (nothing applied). */
  down: boolean;
  /** Delay before a renew reaches the store (a slow round trip). */
  renewLatencyMs: number;
  /** Every store call through the worker's and rival's API, with the elapsed time it was made at. */
  readonly calls: { readonly method: string; readonly at: number }[];
}

const METHODS = new Set<PropertyKey>(['claim', 'renew', 'checkpoint', 'fencedWrite', 'release', 'revoke', 'recover', 'inspect']);

/** Installs fake timers (restore them with `vi.useRealTimers()` after each test) and builds the rig. */
export function createRig(options: { readonly revokeNotices?: boolean } = {}): Rig {
  vi.useFakeTimers({ now: MEMORY_EPOCH, toFake: ['setTimeout', 'clearTimeout', 'setInterval', 'clearInterval', 'Date'] });
  let skew = 0;
  const memory = createMemoryStore({ clock: () => Date.now() + skew });
  const rig: Rig = {
    store: memory,
    worker: null as unknown as Leases<MemoryStore>,
    rival: null as unknown as Leases<MemoryStore>,
    elapsed: () => Date.now() - MEMORY_EPOCH,
    skewStore: (ms) => {
      skew += ms;
    },
    down: false,
    renewLatencyMs: 0,
    calls: [],
  };
  const store = new Proxy(memory, {
    get(target, property) {
      const value: unknown = Reflect.get(target, property, target);
      if (property === 'watchRevoked' && options.revokeNotices !== true) return undefined;
      if (!METHODS.has(property) || typeof value !== 'function') return value;
      return async (...args: unknown[]) => {
        rig.calls.push({ method: String(property), at: rig.elapsed() });
        if (rig.down) throw new StoreUnavailableError('store unreachable (test)');
        if (property === 'renew' && rig.renewLatencyMs > 0) await new Promise((resolve) => setTimeout(resolve, rig.renewLatencyMs));
        return (value as (...params: unknown[]) => unknown).apply(target, args);
      };
    },
  });
  const monotonicClock = () => Date.now();
  Object.assign(rig, {
    worker: createLeases(store, { holder: 'worker', ttlMs: TTL_MS, monotonicClock }),
    rival: createLeases(store, { holder: 'rival', ttlMs: TTL_MS, monotonicClock }),
  });
  return rig;
}

/** Elapsed times of the rig's calls to `method`. */
export const callTimes = (rig: Rig, method: string): number[] => rig.calls.filter((call) => call.method === method).map((call) => call.at);

/** A promise that resolves (with the elapsed time) when `signal` aborts. */
export function abortedAt(rig: Rig, signal: AbortSignal): Promise<number> {
  return new Promise((resolve) => signal.addEventListener('abort', () => resolve(rig.elapsed()), { once: true }));
}

/** Sleeps `ms` of fake time. */
export const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));

/** Timers on a clock of their own, fired in order by `advance`; every delay asked for is recorded. */
export interface QueueTimers {
  readonly timers: Timers;
  /** The clock these timers run on (ms since start). */
  now(): number;
  /** Moves the clock `ms` ahead, firing every timer due on the way (letting promises settle after each). */
  advance(ms: number): Promise<void>;
  /** Every `ms` passed to `setTimeout`, in order. */
  readonly delays: number[];
  /** Timers armed and not yet fired or cleared. */
  pending(): number;
}

/** Builds `QueueTimers` starting at 0. */
export function createQueueTimers(): QueueTimers {
  let now = 0;
  let ids = 0;
  const queue: { at: number; id: number; callback: () => void }[] = [];
  const delays: number[] = [];
  const next = () => queue.sort((a, b) => a.at - b.at || a.id - b.id)[0];
  return {
    timers: {
      setTimeout: (callback, ms) => {
        delays.push(ms);
        queue.push({ at: now + ms, id: ++ids, callback });
        return ids;
      },
      clearTimeout: (id) => {
        const index = queue.findIndex((timer) => timer.id === id);
        if (index >= 0) queue.splice(index, 1);
      },
    },
    now: () => now,
    async advance(ms) {
      const end = now + ms;
      for (let timer = next(); timer !== undefined && timer.at <= end; timer = next()) {
        queue.splice(queue.indexOf(timer), 1);
        now = timer.at;
        timer.callback();
        await new Promise((resolve) => setImmediate(resolve));
      }
      now = end;
      await new Promise((resolve) => setImmediate(resolve));
    },
    delays,
    pending: () => queue.length,
  };
}

/** Work for `withLease` that the test ends: `running` resolves once it started, `finish()` makes it return. */
export function controlledWork(): { work: () => Promise<void>; running: Promise<void>; finish: () => void } {
  let finish: () => void = () => undefined;
  let started: () => void = () => undefined;
  const running = new Promise<void>((resolve) => (started = resolve));
  const work = () =>
    new Promise<void>((resolve) => {
      finish = resolve;
      started();
    });
  return { work, running, finish: () => finish() };
}
