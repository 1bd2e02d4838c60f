/**
 * The shell's side of semaphores (`acquirePermit`, `withPermit`): the store's acquire or the refusal of a store
 * without semaphores, and the keys a waiting acquire listens on. The decision is `fence/permits.ts`'s.
 */
import { InvalidArgumentError, UnsupportedOperationError } from './errors.js';
import { permitKey } from './fence/permits.js';
import type { Store } from './store.js';

/** The options `acquirePermit` reads (`withPermit` reads these and `withLease`'s own). */
export const ACQUIRE_PERMIT_OPTIONS = ['limit', 'ttlMs', 'runId', 'attributes', 'recovering', 'wait'] as const;

/**
 * A waiting acquire listens for the releases of permits 1..limit when the limit is at most this (one subscription
 * each); above it, it polls (`pollMs`) and sleeps until `nextAt`.
 */
export const MAX_WATCHED_PERMITS = 64;

/** The store's `acquirePermit`, bound, or `UnsupportedOperationError` when it offers none. */
export function acquireMethodOf(store: Store): NonNullable<Store['acquirePermit']> {
  let acquire: Store['acquirePermit'];
  try {
    acquire = store.acquirePermit;
  } catch {
    throw new InvalidArgumentError('acquirePermit needs a Store whose methods can be read (a getter or Proxy threw)');
  }
  if (typeof acquire !== 'function')
    throw new UnsupportedOperationError('acquirePermit', store.id, 'the store offers no semaphores (acquirePermit)');
  return acquire.bind(store);
}

/**
 * Listens for the releases and revokes of permits 1..`limit` of `semaphore` (`watchFreed` of each key), calling
 * `wake`; resolves once every subscription is live, with the function that ends them. `null` when the store has no
 * notifications or the limit is above `MAX_WATCHED_PERMITS`.
 */
export function permitListener(store: Store, semaphore: string, limit: number): ((wake: () => void) => Promise<() => void>) | null {
  const watchFreed = store.watchFreed;
  if (typeof watchFreed !== 'function' || limit > MAX_WATCHED_PERMITS) return null;
  return async (wake) => {
    const keys = Array.from({ length: limit }, (_, index) => permitKey(semaphore, index + 1));
    const settled = await Promise.allSettled(keys.map((key) => watchFreed.call(store, key, wake)));
    const stops = settled.flatMap((result) => (result.status === 'fulfilled' ? [result.value] : []));
    // NOTE: a subscription that failed (a notification connection down) only leaves that permit to polling.
    return () => {
      for (const stop of stops) stop();
    };
  };
}
