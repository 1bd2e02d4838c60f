/**
 * What every store's `watchFreed` must do, written once for the Redis and Postgres tests
 * (test/adapters/*-freed.test.ts): a wake-up counter, and the checks that read the same on every store.
 */
import { expect, vi } from 'vitest';
import type { Leases } from '../../src/leases-types.js';
import type { Store } from '../../src/store.js';

/** Counts `watchFreed` wake-ups and hands out a promise for the next one (tests wait for it, not for a duration). */
export interface WakeCounter {
  readonly onFreed: () => void;
  readonly count: () => number;
  next(): Promise<void>;
}

export function wakeCounter(): WakeCounter {
  let count = 0;
  let waiting: Array<() => void> = [];
  return {
    onFreed: () => {
      count += 1;
      const resolve = waiting;
      waiting = [];
      for (const done of resolve) done();
    },
    count: () => count,
    next: () => new Promise((resolve) => waiting.push(resolve)),
  };
}

/**
 * A watch hears a release and a revoke as soon as it resolves, and no release that ends nothing (a
 * repeated one, a revoked grant's). NOTE: notifications of one key arrive in commit order on the one
 * notification connection, so the last release closes the window in which a stray one would show.
 */
export async function expectReleaseAndRevokeHeard(store: Store, leases: Leases, key: string): Promise<void> {
  const wakes = wakeCounter();
  const end = await store.watchFreed!(key, wakes.onFreed);
  const first = await leases.claimOrThrow(key);
  let woken = wakes.next();
  expect((await leases.release(first)).ok).toBe(true);
  await woken;
  expect(wakes.count()).toBe(1);

  const second = await leases.claimOrThrow(key);
  await leases.release(first);
  woken = wakes.next();
  expect((await leases.revoke(key, { reason: 'test' })).ok).toBe(true);
  expect((await leases.release(second)).ok).toBe(false);
  await woken;
  const third = await leases.claimOrThrow(key);
  woken = wakes.next();
  await leases.release(third);
  await woken;
  expect(wakes.count()).toBe(3);
  end();
}

/** Two keys watched on one connection: a release wakes only its own key's watcher. Returns the watches' ends. */
export async function expectOwnKeyWoken(store: Store, leases: Leases, [a, b]: readonly [string, string]): Promise<Array<() => void>> {
  const [wakesA, wakesB] = [wakeCounter(), wakeCounter()];
  const ends = [await store.watchFreed!(a, wakesA.onFreed), await store.watchFreed!(b, wakesB.onFreed)];
  const leaseA = await leases.claimOrThrow(a);
  const leaseB = await leases.claimOrThrow(b);
  const [wokenA, wokenB] = [wakesA.next(), wakesB.next()];
  await leases.release(leaseA);
  await wokenA;
  await leases.release(leaseB);
  await wokenB;
  expect([wakesA.count(), wakesB.count()]).toEqual([1, 1]);
  return ends;
}

/**
 * After `drop()` cuts the notification connection, the store wakes the watcher (messages may have been lost),
 * `subscribers()` comes back to 1 (resubscribed), and the next release is heard. Returns the watch's end.
 */
export async function expectHeardAfterReconnect(
  store: Store,
  leases: Leases,
  key: string,
  drop: () => Promise<void>,
  subscribers: () => Promise<number>,
): Promise<() => void> {
  const wakes = wakeCounter();
  const end = await store.watchFreed!(key, wakes.onFreed);
  const reconnected = wakes.next();
  await drop();
  await reconnected;
  await vi.waitFor(async () => expect(await subscribers()).toBe(1), { timeout: 10_000, interval: 20 });
  const lease = await leases.claimOrThrow(key);
  const before = wakes.count();
  const woken = wakes.next();
  await leases.release(lease);
  await woken;
  expect(wakes.count()).toBe(before + 1);
  return end;
}
