/**
 * A store error during a wait ends the waiting claim it was made for with that error; the other waiters in
 * the queue keep waiting and are granted once the store answers again.
 */
import { describe, expect, it } from 'vitest';
import { createMemoryStore } from '../../src/adapters/memory/index.js';
import { createLeases, StoreUnavailableError, type Store } from '../../src/index.js';
import { countingStore, until } from './support/counting-store.js';

/** `inner` whose claims fail with StoreUnavailableError while `down` is set. */
function flakyStore<S extends Store>(inner: S): { store: S; down: boolean } {
  const flaky = { store: inner, down: false };
  flaky.store = new Proxy(inner, {
    get(target, property) {
      if (property === 'claim') {
        return (command: Parameters<Store['claim']>[0]) =>
          flaky.down ? Promise.reject(new StoreUnavailableError('store down')) : target.claim(command);
      }
      const value: unknown = Reflect.get(target, property, target);
      return typeof value === 'function' ? (value as (...args: unknown[]) => unknown).bind(target) : value;
    },
  });
  return flaky;
}

describe('a store error while waiting', () => {
  it('rejects the waiter whose claim failed; the next one is granted when the store is back', async () => {
    const flaky = flakyStore(createMemoryStore());
    const counting = countingStore(flaky.store);
    const holder = createLeases(counting.store, { holder: 'holder' });
    const waiting = createLeases(counting.store, { holder: 'waiter' });
    const held = await holder.claimOrThrow('job:1', { ttlMs: null });
    const first = waiting.claim('job:1', { ttlMs: null, wait: { timeoutMs: 60_000, pollMs: 10, recheckMs: 600_000 } });
    const second = waiting.claim('job:1', { ttlMs: null, wait: { timeoutMs: 60_000, pollMs: 10, recheckMs: 600_000 } });
    await until(() => counting.claims() === 2 && counting.claimsInFlight() === 0, 'first refusal');
    flaky.down = true;
    await holder.release(held);
    await expect(first).rejects.toBeInstanceOf(StoreUnavailableError);
    flaky.down = false;
    const granted = await second;
    expect(granted.ok).toBe(true);
    expect(counting.liveSubscriptions()).toBe(0);
  });

  it('a waiter that joins while the store has failed every claim so far is still tried (no wait left without a timer)', async () => {
    // Found by the cross-process test on Postgres: waiters of a server that was restarting hung forever
    // (the process exited with 13, an unsettled await): a claim joining the queue cleared the pending
    // retry, and with no answer from the store yet there was no next attempt to plan.
    const flaky = flakyStore(createMemoryStore());
    const counting = countingStore(flaky.store);
    const waiting = createLeases(counting.store, { holder: 'waiter' });
    flaky.down = true;
    const wait = { timeoutMs: 2_000, pollMs: 20 };
    const first = waiting.claim('job:2', { ttlMs: null, wait });
    const second = waiting.claim('job:2', { ttlMs: null, wait });
    await expect(first).rejects.toBeInstanceOf(StoreUnavailableError);
    const third = waiting.claim('job:2', { ttlMs: null, wait });
    flaky.down = false;
    const granted = await second;
    expect(granted.ok).toBe(true);
    if (granted.ok) await waiting.release(granted.lease);
    expect((await third).ok).toBe(true);
    expect(counting.liveSubscriptions()).toBe(0);
  });
});
