/**
 * Waiting without release notifications is visible (issue 29 item 4: it silently polled once a second). A
 * waiting claim's refusal says `polled: true` when its key's queue heard no notifications (the store has no
 * `watchFreed`, or subscribing failed), and the queue announces it once on `leasefence:wait-polling`
 * (`WAIT_POLLING_CHANNEL`, leasefence/diagnostics) with the key, the reason and its `pollMs`.
 */
import diagnostics_channel from 'node:diagnostics_channel';
import { afterEach, describe, expect, it } from 'vitest';
import { createMemoryStore } from '../../src/adapters/memory/index.js';
import { WAIT_POLLING_CHANNEL, type WaitPollingEvent } from '../../src/diagnostics-entry.js';
import { StoreUnavailableError } from '../../src/errors.js';
import { createLeases } from '../../src/leases.js';
import type { Store } from '../../src/store.js';
import { countingStore } from './support/counting-store.js';

const heard: WaitPollingEvent[] = [];
const listen = (message: unknown): void => void heard.push(message as WaitPollingEvent);
diagnostics_channel.subscribe(WAIT_POLLING_CHANNEL, listen);
afterEach(() => {
  heard.length = 0;
});

/** Holds `key` in `store`, then waits 30 ms for it with two waiters; returns their refusals. */
async function waitOnHeld(store: Store, key: string): Promise<unknown[]> {
  await createLeases(store, { holder: 'holder', ttlMs: 60_000 }).claimOrThrow(key);
  const waiter = createLeases(store, { holder: 'waiter', ttlMs: 60_000 });
  return Promise.all([
    waiter.claim(key, { wait: { timeoutMs: 30, pollMs: 10 } }),
    waiter.claim(key, { wait: { timeoutMs: 30, pollMs: 10 } }),
  ]);
}

describe('a wait without notifications says it polled', () => {
  it('a store without watchFreed: polled, and one wait-polling event per key queue (no-notification-connection)', async () => {
    const results = await waitOnHeld(countingStore(createMemoryStore(), { watch: false }).store, 'job:polled');
    for (const result of results) expect(result).toMatchObject({ ok: false, reason: 'held', waitEnded: 'timeout', polled: true });
    expect(heard).toEqual([{ key: 'job:polled', reason: 'no-notification-connection', pollMs: 10 }]);
  });

  it('a store whose subscription fails: polled, and the event says subscribe-failed', async () => {
    const inner = createMemoryStore();
    const failing: Store = {
      ...inner,
      claim: inner.claim,
      watchFreed: async () => Promise.reject(new StoreUnavailableError('the notification connection is down')),
    };
    const results = await waitOnHeld(failing, 'job:failed');
    for (const result of results) expect(result).toMatchObject({ ok: false, polled: true });
    expect(heard).toEqual([{ key: 'job:failed', reason: 'subscribe-failed', pollMs: 10 }]);
  });

  it('a store with watchFreed: not polled, and nothing is published', async () => {
    const results = await waitOnHeld(createMemoryStore(), 'job:notified');
    for (const result of results) expect(result).toMatchObject({ ok: false, reason: 'held', polled: false });
    expect(heard).toEqual([]);
  });
});
