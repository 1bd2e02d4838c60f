/**
 * A waiting claim that is not granted ends at its timeout with the store's last refusal and how long it
 * waited; bad wait options are refused before any I/O.
 */
import { describe, expect, it } from 'vitest';
import { createMemoryStore } from '../../src/adapters/memory/index.js';
import { createLeases, InvalidArgumentError, LeaseBusyError, RecoveryRequiredError } from '../../src/index.js';
import { createManualClock } from '../../src/adapters/memory/index.js';
import { spyOn } from '../leases/spy-store.js';
import { countingStore, until } from './support/counting-store.js';

describe('a waiting claim that times out', () => {
  it('returns the last held refusal with waitedMs and waitEnded', async () => {
    const store = createMemoryStore();
    const holder = createLeases(store, { holder: 'holder' });
    const waiting = createLeases(store, { holder: 'waiter' });
    const held = await holder.claimOrThrow('job:1', { ttlMs: null, runId: 'r1' });
    const result = await waiting.claim('job:1', { wait: { timeoutMs: 40 } });
    expect(result).toMatchObject({
      ok: false,
      reason: 'held',
      holder: 'holder',
      runId: 'r1',
      token: held.token,
      expiresAt: null,
      waitEnded: 'timeout',
    });
    expect(!result.ok && result.waitedMs).toBeGreaterThanOrEqual(39);
    expect(JSON.parse(JSON.stringify(result))).toMatchObject({ token: String(held.token), waitEnded: 'timeout' });
  });

  it('the last refusal is the newest: a holder that took the key while it waited is the one reported', async () => {
    const clock = createManualClock(5_000);
    const counting = countingStore(createMemoryStore({ clock }));
    const first = createLeases(counting.store, { holder: 'first' });
    const second = createLeases(counting.store, { holder: 'second' });
    const waiting = createLeases(counting.store, { holder: 'waiter' });
    await first.claimOrThrow('job:2', { ttlMs: 50 });
    const result = waiting.claim('job:2', { wait: { timeoutMs: 300, jitterMs: 0 } });
    await until(() => counting.claims() === 2 && counting.claimsInFlight() === 0, 'first refusal');
    // NOTE: `first` expires in store time and `second` takes the key before the waiter's scheduled attempt.
    clock.advance(50);
    // NOTE: `jumpQueue`: the waiter is queued for the key, and a claim that does not wait is refused `queued`.
    expect((await second.claim('job:2', { ttlMs: null, jumpQueue: true })).ok).toBe(true);
    expect(await result).toMatchObject({ ok: false, reason: 'held', holder: 'second', waitEnded: 'timeout' });
    expect(counting.claims()).toBe(4);
  });

  it('waiters whose deadline passed before the first answer, a grant to the head: the others end with the new holder, none hangs', async () => {
    const inner = createMemoryStore();
    let answer!: () => void;
    const answering = new Promise<void>((resolve) => (answer = resolve));
    // NOTE: the store's first answer comes only after every waiter's deadline (a slow store, or a subscription still pending).
    const slow = new Proxy(inner, {
      get(target, property) {
        if (property === 'claim') return async (command: Parameters<typeof inner.claim>[0]) => answering.then(() => target.claim(command));
        const value: unknown = Reflect.get(target, property, target);
        return typeof value === 'function' ? (value as (...args: unknown[]) => unknown).bind(target) : value;
      },
    });
    const waiting = createLeases(slow, { holder: 'waiter' });
    const started = performance.now();
    const claims = [1, 2, 3].map((index) => waiting.claim('job:overdue', { runId: `r${index}`, wait: { timeoutMs: 10 } }));
    await until(() => performance.now() - started > 30, 'every deadline passed');
    answer();
    const [first, ...rest] = await Promise.all(claims);
    expect(first).toMatchObject({ ok: true });
    for (const result of rest)
      expect(result).toMatchObject({ ok: false, reason: 'held', holder: 'waiter', runId: 'r1', waitEnded: 'timeout' });
  });

  it('claimOrThrow raises LeaseBusyError carrying waitedMs, or RecoveryRequiredError', async () => {
    const store = createMemoryStore();
    const holder = createLeases(store, { holder: 'holder' });
    const waiting = createLeases(store, { holder: 'waiter' });
    const held = await holder.claimOrThrow('job:3', { ttlMs: null });
    const busy = await waiting.claimOrThrow('job:3', { wait: { timeoutMs: 30 } }).catch((error: unknown) => error);
    expect(busy).toBeInstanceOf(LeaseBusyError);
    expect((busy as LeaseBusyError).waitedMs).toBeGreaterThanOrEqual(29);
    expect((busy as LeaseBusyError).message).toMatch(/gave up after waiting \d+ ms/);
    await holder.checkpoint(held, { step: 1 });
    await holder.revoke('job:3', { reason: 'stuck', requireRecovery: true });
    await expect(waiting.claimOrThrow('job:3', { wait: { timeoutMs: 30 } })).rejects.toBeInstanceOf(RecoveryRequiredError);
  });

  it('timeoutMs 0 answers once without waiting; a free key is granted at once', async () => {
    const counting = countingStore(createMemoryStore());
    const leases = createLeases(counting.store, { holder: 'w' });
    const granted = await leases.claim('job:4', { wait: { timeoutMs: 0 } });
    expect(granted.ok).toBe(true);
    const refused = await leases.claim('job:4', { wait: { timeoutMs: 0 } });
    expect(refused).toMatchObject({ ok: false, reason: 'held', waitEnded: 'timeout' });
    expect(counting.claims()).toBe(2);
    expect(counting.liveSubscriptions()).toBe(0);
  });

  it('refuses bad wait options with InvalidArgumentError before any I/O', async () => {
    const { store, calls } = spyOn(createMemoryStore());
    const leases = createLeases(store, { holder: 'w' });
    const bad: unknown[] = [
      null,
      5,
      {},
      { timeoutMs: -1 },
      { timeoutMs: Number.NaN },
      { timeoutMs: Number.POSITIVE_INFINITY },
      { timeoutMs: 2 ** 31 },
      { timeoutMs: '100' },
      { timeoutMs: 10, signal: {} },
      { timeoutMs: 10, pollMs: 0 },
      { timeoutMs: 10, recheckMs: -5 },
      { timeoutMs: 10, jitterMs: Number.NaN },
    ];
    for (const wait of bad) {
      await expect(leases.claim('job:5', { wait } as never), JSON.stringify(wait)).rejects.toBeInstanceOf(InvalidArgumentError);
      await expect(leases.withLease('job:5', async () => 1, { wait } as never)).rejects.toBeInstanceOf(InvalidArgumentError);
    }
    expect(calls).toEqual([]);
  });
});
