/**
 * Measures a chain of handoffs on one key: a holder holds it, N waiting claims queue behind it, and every
 * grant is released at once, so each release should lead to exactly one claim and one grant. Reusable on
 * any store (wrap it with `countingStore`), with the waiters on one `Leases` instance or on many.
 */
import type { Leases } from '../../../src/leases-types.js';
import type { Store } from '../../../src/store.js';
import { until, type CountingStore } from './counting-store.js';

export interface HandoffChainOptions {
  readonly key: string;
  /** Holds the key (without expiry) before the waiters queue. */
  readonly holder: Leases;
  /** The `Leases` instance waiter `index` claims through. */
  readonly leasesOf: (index: number) => Leases;
  readonly waiters: number;
  /** How many distinct `Leases` instances the waiters use (each subscribes and claims once up front). */
  readonly instances: number;
  readonly counting: CountingStore<Store>;
  /** @default 60_000 */
  readonly timeoutMs?: number;
}

export interface HandoffChain {
  /** Waiter indexes in the order they were granted (FIFO: 0, 1, 2, ...). */
  readonly order: number[];
  /** Claims the store received from the holder's release to the last grant. */
  readonly claims: number;
  /** Releases in that span: the holder's and every waiter's but the last. */
  readonly releases: number;
  /** `claims / releases`: 1 when no release causes a burst of failed claims. */
  readonly claimsPerRelease: number;
}

export async function runHandoffChain(options: HandoffChainOptions): Promise<HandoffChain> {
  const { key, holder, counting, waiters, instances } = options;
  const held = await holder.claimOrThrow(key, { ttlMs: null });
  const order: number[] = [];
  const granted = Array.from({ length: waiters }, async (_, index) => {
    const leases = options.leasesOf(index);
    const result = await leases.claim(key, { ttlMs: null, wait: { timeoutMs: options.timeoutMs ?? 60_000 } });
    if (!result.ok) throw new Error(`waiter ${index} was not granted: ${JSON.stringify(result)}`);
    order.push(index);
    await leases.release(result.lease);
  });
  // NOTE: every instance has subscribed and had its first refusal before the chain starts.
  await until(
    () =>
      counting.claimsInFlight() === 0 &&
      counting.liveSubscriptions() >= (typeof counting.store.watchFreed === 'function' ? instances : 0) &&
      counting.claims() >= instances + 1,
    'waiters queued',
  );
  const before = counting.claims();
  await holder.release(held);
  await Promise.all(granted);
  const claims = counting.claims() - before;
  return { order, claims, releases: waiters, claimsPerRelease: claims / waiters };
}
