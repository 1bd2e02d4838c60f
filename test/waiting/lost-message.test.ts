/**
 * Correctness never depends on a message: a waiter whose release notification is lost (a store without
 * watchFreed, or one whose messages are dropped) is still granted, at the holder's scheduled expiry, or
 * within pollMs on a store that cannot notify.
 */
import { describe, expect, it } from 'vitest';
import { createMemoryStore } from '../../src/adapters/memory/index.js';
import { createLeases } from '../../src/index.js';
import { countingStore, until } from './support/counting-store.js';

const TTL_MS = 150;

describe('a lost notification only delays', () => {
  for (const mode of ['no watchFreed', 'messages dropped'] as const) {
    it(`${mode}: an early release is noticed at the holder's expiry, with no attempt in between`, async () => {
      const counting = countingStore(createMemoryStore(), { watch: mode === 'messages dropped' });
      counting.drop = mode === 'messages dropped';
      const holder = createLeases(counting.store, { holder: 'holder' });
      const waiting = createLeases(counting.store, { holder: 'waiter' });
      const claimedAt = performance.now();
      const held = await holder.claimOrThrow('job:1', { ttlMs: TTL_MS });
      // NOTE: pollMs beyond the expiry, so the only scheduled attempt is the one at expiry.
      const result = waiting.claim('job:1', { wait: { timeoutMs: 30_000, jitterMs: 0, pollMs: 60_000 } });
      await until(() => counting.claims() === 2 && counting.claimsInFlight() === 0, 'first refusal');
      await holder.release(held);
      const granted = await result;
      expect(granted.ok).toBe(true);
      expect(counting.claims()).toBe(3);
      expect(counting.delivered()).toBe(0);
      // NOTE: the one scheduled attempt falls at or after the holder's expiry (2 ms for Date.now vs performance.now).
      expect(performance.now() - claimedAt).toBeGreaterThanOrEqual(TTL_MS - 2);
    });
  }

  it('a store without watchFreed polls every pollMs: a release is noticed within it', async () => {
    const counting = countingStore(createMemoryStore(), { watch: false });
    const holder = createLeases(counting.store, { holder: 'holder' });
    const waiting = createLeases(counting.store, { holder: 'waiter' });
    const held = await holder.claimOrThrow('job:2', { ttlMs: null });
    const result = waiting.claim('job:2', { wait: { timeoutMs: 30_000, pollMs: 20 } });
    await until(() => counting.claims() >= 3, 'two polls');
    await holder.release(held);
    expect((await result).ok).toBe(true);
    expect(counting.liveSubscriptions()).toBe(0);
  });
});
