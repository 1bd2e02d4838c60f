/**
 * Abort stops waiting at once and leaves nothing behind: no timer (counted with node's active resources),
 * no subscription (counted by the store wrapper), no abort listener (node's getEventListeners), and no
 * grant held for a waiter that left while its claim was in flight.
 */
import { getEventListeners } from 'node:events';
import { describe, expect, it } from 'vitest';
import { createMemoryStore } from '../../src/adapters/memory/index.js';
import { createLeases, type Store } from '../../src/index.js';
import { countingStore, until } from './support/counting-store.js';

const timers = (): number => process.getActiveResourcesInfo().filter((resource) => resource === 'Timeout').length;

/** A store whose claims wait for `open()` while `closed` is set. */
function gatedStore<S extends Store>(inner: S): { store: S; close: () => void; open: () => void } {
  let gate: Promise<void> | null = null;
  let openGate = (): void => undefined;
  const store = new Proxy(inner, {
    get(target, property) {
      if (property === 'claim') {
        return async (command: Parameters<Store['claim']>[0]) => {
          if (gate !== null) await gate;
          return target.claim(command);
        };
      }
      const value: unknown = Reflect.get(target, property, target);
      return typeof value === 'function' ? (value as (...args: unknown[]) => unknown).bind(target) : value;
    },
  });
  return {
    store,
    close: () => {
      gate = new Promise((resolve) => (openGate = resolve));
    },
    open: () => {
      gate = null;
      openGate();
    },
  };
}

describe('aborting a waiting claim', () => {
  it('resolves at once with the last refusal and leaves no timer, subscription or listener', async () => {
    const counting = countingStore(createMemoryStore());
    const holder = createLeases(counting.store, { holder: 'holder' });
    const waiting = createLeases(counting.store, { holder: 'waiter' });
    await holder.claimOrThrow('job:1', { ttlMs: null });
    const before = timers();
    const controller = new AbortController();
    const result = waiting.claim('job:1', { wait: { timeoutMs: 60_000, signal: controller.signal } });
    await until(() => counting.claims() === 2 && counting.claimsInFlight() === 0, 'first refusal');
    // NOTE: while waiting: the deadline timer, the re-check timer (no expiry), one subscription, one listener.
    expect(timers()).toBe(before + 2);
    expect(counting.liveSubscriptions()).toBe(1);
    expect(getEventListeners(controller.signal, 'abort')).toHaveLength(1);
    const abortedAt = performance.now();
    controller.abort(new Error('shutting down'));
    expect(await result).toMatchObject({ ok: false, reason: 'held', holder: 'holder', waitEnded: 'aborted' });
    expect(performance.now() - abortedAt).toBeLessThan(1_000);
    expect(timers()).toBe(before);
    expect(counting.liveSubscriptions()).toBe(0);
    expect(getEventListeners(controller.signal, 'abort')).toHaveLength(0);
    expect(counting.claims()).toBe(2);
  });

  it('before the store answered: rejects with the signal reason, and releases the grant that arrives later', async () => {
    const gated = gatedStore(createMemoryStore());
    const counting = countingStore(gated.store);
    const leases = createLeases(counting.store, { holder: 'waiter' });
    const before = timers();
    gated.close();
    const controller = new AbortController();
    const result = leases.claim('job:2', { wait: { timeoutMs: 60_000, signal: controller.signal } });
    await until(() => counting.claimsInFlight() === 1, 'claim in flight');
    const reason = new Error('stop');
    controller.abort(reason);
    await expect(result).rejects.toBe(reason);
    expect(timers()).toBe(before);
    expect(getEventListeners(controller.signal, 'abort')).toHaveLength(0);
    gated.open();
    // NOTE: the claim was granted after the waiter left: the queue gives the key back.
    await until(() => counting.store.record('job:2')?.ending?.kind === 'released', 'orphan grant released');
    expect(counting.liveSubscriptions()).toBe(0);
  });

  it('an already aborted signal rejects with its reason before any I/O', async () => {
    const counting = countingStore(createMemoryStore());
    const leases = createLeases(counting.store, { holder: 'waiter' });
    const reason = new Error('already');
    await expect(leases.claim('job:3', { wait: { timeoutMs: 1_000, signal: AbortSignal.abort(reason) } })).rejects.toBe(reason);
    expect(counting.claims()).toBe(0);
    expect(counting.liveSubscriptions()).toBe(0);
  });

  it('aborting some waiters leaves the others queued, still granted in order', async () => {
    const counting = countingStore(createMemoryStore());
    const leases = createLeases(counting.store, { holder: 'w' });
    const held = await leases.claimOrThrow('job:4', { ttlMs: null });
    const controllers = Array.from({ length: 6 }, () => new AbortController());
    const order: number[] = [];
    const results = controllers.map(async (controller, index) => {
      const result = await leases.claim('job:4', { ttlMs: null, wait: { timeoutMs: 60_000, signal: controller.signal } });
      if (result.ok) {
        order.push(index);
        await leases.release(result.lease);
      }
      return result;
    });
    await until(() => counting.claims() === 2 && counting.claimsInFlight() === 0, 'first refusal');
    for (const index of [0, 2, 3]) controllers[index]?.abort();
    await leases.release(held);
    const settled = await Promise.all(results);
    expect(order).toEqual([1, 4, 5]);
    expect(settled.filter((result) => !result.ok).map((result) => !result.ok && result.waitEnded)).toEqual([
      'aborted',
      'aborted',
      'aborted',
    ]);
    expect(counting.liveSubscriptions()).toBe(0);
    for (const controller of controllers) expect(getEventListeners(controller.signal, 'abort')).toHaveLength(0);
  });
});

describe('a signal shared by many waiting claims', () => {
  it('carries one abort listener for all of them, and none once they end', async () => {
    const counting = countingStore(createMemoryStore());
    const leases = createLeases(counting.store, { holder: 'w' });
    await leases.claimOrThrow('job:5', { ttlMs: null });
    const shutdown = new AbortController();
    const results = Array.from({ length: 32 }, () => leases.claim('job:5', { wait: { timeoutMs: 60_000, signal: shutdown.signal } }));
    await until(() => counting.claims() === 2 && counting.claimsInFlight() === 0, 'first refusal');
    expect(getEventListeners(shutdown.signal, 'abort')).toHaveLength(1);
    shutdown.abort();
    const ended = await Promise.all(results);
    expect(ended.every((result) => !result.ok && result.waitEnded === 'aborted')).toBe(true);
    expect(getEventListeners(shutdown.signal, 'abort')).toHaveLength(0);
  });
});
