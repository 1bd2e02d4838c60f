/**
 * A store wrapper for waiting tests (any adapter: memory here, Redis and Postgres in test/waiting-stores):
 * counts claims and live `watchFreed` subscriptions, and can hide `watchFreed` or drop its messages, to
 * prove that a waiting claim leaves nothing behind and never depends on a message.
 */
import type { Store } from '../../../src/store.js';

export interface CountingStore<S extends Store> {
  readonly store: S;
  /** Claims sent through the wrapper so far. */
  readonly claims: () => number;
  /** Claims sent and not yet answered. */
  readonly claimsInFlight: () => number;
  /** Subscriptions made and not yet ended. */
  readonly liveSubscriptions: () => number;
  /** Freed messages delivered to subscribers (after `drop`). */
  readonly delivered: () => number;
  /** While `true`, freed messages are swallowed (a lost notification). */
  drop: boolean;
}

export interface CountingOptions {
  /** `false`: the wrapper has no `watchFreed` (a store without a notification channel). @default true */
  readonly watch?: boolean;
}

/** Wraps `inner`; every other method passes through unchanged. */
export function countingStore<S extends Store>(inner: S, options: CountingOptions = {}): CountingStore<S> {
  let claims = 0;
  let inFlight = 0;
  let live = 0;
  let delivered = 0;
  const counting: CountingStore<S> = {
    store: undefined as unknown as S,
    claims: () => claims,
    claimsInFlight: () => inFlight,
    liveSubscriptions: () => live,
    delivered: () => delivered,
    drop: false,
  };
  const claim: Store['claim'] = async (command) => {
    claims += 1;
    inFlight += 1;
    try {
      return await inner.claim(command);
    } finally {
      inFlight -= 1;
    }
  };
  const watchFreed = async (key: string, onFreed: () => void): Promise<() => void> => {
    const unsubscribe = await (inner.watchFreed as NonNullable<Store['watchFreed']>).call(inner, key, () => {
      if (counting.drop) return;
      delivered += 1;
      onFreed();
    });
    live += 1;
    let ended = false;
    return () => {
      if (ended) return;
      ended = true;
      live -= 1;
      unsubscribe();
    };
  };
  const watch = options.watch !== false && typeof inner.watchFreed === 'function';
  (counting as { store: S }).store = new Proxy(inner, {
    get(target, property) {
      if (property === 'claim') return claim;
      if (property === 'watchFreed') return watch ? watchFreed : undefined;
      const value: unknown = Reflect.get(target, property, target);
      return typeof value === 'function' ? (value as (...args: unknown[]) => unknown).bind(target) : value;
    },
  });
  return counting;
}

/** Resolves once `condition()` holds, checking after every turn of the event loop (a condition, not a duration). */
export async function until(condition: () => boolean, what = 'condition', limitMs = 20_000): Promise<void> {
  const started = performance.now();
  while (!condition()) {
    if (performance.now() - started > limitMs) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setImmediate(resolve));
  }
}
