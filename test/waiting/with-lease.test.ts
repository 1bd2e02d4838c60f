/**
 * `withLease` takes the same `wait` option: it runs the work once the key is granted, returns the waited
 * refusal on timeout, and its own `signal` also ends the wait (outcome `stopped`, nothing claimed).
 */
import { getEventListeners } from 'node:events';
import { describe, expect, it } from 'vitest';
import { createMemoryStore } from '../../src/adapters/memory/index.js';
import { createLeases } from '../../src/index.js';
import { countingStore, until } from './support/counting-store.js';

describe('withLease with wait', () => {
  it('runs the work once the holder releases', async () => {
    const counting = countingStore(createMemoryStore());
    const holder = createLeases(counting.store, { holder: 'holder' });
    const waiting = createLeases(counting.store, { holder: 'waiter' });
    const held = await holder.claimOrThrow('job:1', { ttlMs: null });
    const outcome = waiting.withLease('job:1', async (lease) => lease.holder, { wait: { timeoutMs: 60_000, recheckMs: 600_000 } });
    await until(() => counting.claims() === 2 && counting.claimsInFlight() === 0, 'first refusal');
    await holder.release(held);
    expect(await outcome).toMatchObject({ ok: true, value: 'waiter', released: true });
  });

  it('returns the waited refusal at the timeout', async () => {
    const store = createMemoryStore();
    const holder = createLeases(store, { holder: 'holder' });
    await holder.claimOrThrow('job:2', { ttlMs: null });
    let ran = false;
    const outcome = await createLeases(store, { holder: 'waiter' }).withLease('job:2', async () => (ran = true), {
      wait: { timeoutMs: 30 },
    });
    expect(outcome).toMatchObject({ ok: false, reason: 'held', waitEnded: 'timeout' });
    expect(ran).toBe(false);
  });

  it("the run's signal ends the wait: stopped, nothing claimed, no listener left on either signal", async () => {
    const counting = countingStore(createMemoryStore());
    const holder = createLeases(counting.store, { holder: 'holder' });
    await holder.claimOrThrow('job:3', { ttlMs: null });
    const run = new AbortController();
    const wait = new AbortController();
    const outcome = createLeases(counting.store, { holder: 'waiter' }).withLease('job:3', async () => 1, {
      signal: run.signal,
      wait: { timeoutMs: 60_000, signal: wait.signal },
    });
    await until(() => counting.claims() === 2 && counting.claimsInFlight() === 0, 'first refusal');
    run.abort(new Error('SIGTERM'));
    expect(await outcome).toMatchObject({ ok: false, reason: 'stopped', lease: null, cause: new Error('SIGTERM') });
    expect(getEventListeners(run.signal, 'abort')).toHaveLength(0);
    expect(getEventListeners(wait.signal, 'abort')).toHaveLength(0);
    expect(counting.liveSubscriptions()).toBe(0);
  });

  it("wait.signal ends the wait with the waited refusal (the run's signal untouched)", async () => {
    const counting = countingStore(createMemoryStore());
    await createLeases(counting.store, { holder: 'holder' }).claimOrThrow('job:4', { ttlMs: null });
    const run = new AbortController();
    const wait = new AbortController();
    const outcome = createLeases(counting.store, { holder: 'waiter' }).withLease('job:4', async () => 1, {
      signal: run.signal,
      wait: { timeoutMs: 60_000, signal: wait.signal },
    });
    await until(() => counting.claims() === 2 && counting.claimsInFlight() === 0, 'first refusal');
    wait.abort();
    expect(await outcome).toMatchObject({ ok: false, reason: 'held', waitEnded: 'aborted' });
    expect(getEventListeners(run.signal, 'abort')).toHaveLength(0);
  });
});
