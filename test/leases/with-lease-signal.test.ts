/**
 * `withLease`'s lazy signal: `lease.signal` is made on first read (a one-parameter `fn` that never reads it
 * costs the run no AbortSignal), yet every abort is observable: one that happened before the first read
 * gives a signal that is already aborted, with the same reason. And the renewal's timers are armed lazily:
 * a run that ends within its turn of the event loop leaves no timer of its own.
 */
import { afterEach, describe, expect, it, vi } from 'vitest';
import { createMemoryStore } from '../../src/adapters/memory/index.js';
import { LeaseLostError } from '../../src/errors.js';
import { createLeases } from '../../src/leases.js';
import type { RunningLease } from '../../src/leases-types.js';
import { callTimes, createRig, sleep, TTL_MS } from './with-lease-rig.js';

const KEY = 'job:signal';

afterEach(() => {
  vi.useRealTimers();
  vi.unstubAllGlobals();
});

/** Counts the AbortControllers made while it is installed (the run's signal is one). */
function countAbortControllers(): { made: () => number } {
  let made = 0;
  const Original = globalThis.AbortController;
  vi.stubGlobal(
    'AbortController',
    class CountedAbortController extends Original {
      constructor() {
        super();
        made += 1;
      }
    },
  );
  return { made: () => made };
}

describe('withLease: the run signal is made on first read', () => {
  it('a one-parameter fn that never reads lease.signal costs no AbortSignal; one that reads it gets one', async () => {
    const leases = createLeases(createMemoryStore(), { holder: 'worker', ttlMs: TTL_MS });
    const counter = countAbortControllers();
    const quiet = await leases.withLease(KEY, async (lease) => lease.token);
    expect(quiet).toMatchObject({ ok: true, released: true });
    expect(counter.made()).toBe(0);
    const reading = await leases.withLease(KEY, async (lease) => lease.signal.aborted);
    expect(reading).toMatchObject({ ok: true, value: false, released: true });
    expect(counter.made()).toBe(1);
  });

  it('a fn of two parameters (or none: it may read `arguments`) is handed the signal, the same one as lease.signal', async () => {
    const leases = createLeases(createMemoryStore(), { holder: 'worker', ttlMs: TTL_MS });
    const two = await leases.withLease(KEY, async (lease, signal) => signal instanceof AbortSignal && signal === lease.signal);
    expect(two).toMatchObject({ ok: true, value: true });
    const none = await leases.withLease(KEY, async function (this: unknown) {
      // biome-ignore lint/complexity/noArguments: the point: a zero-parameter function can still read it
      const [lease, signal] = arguments as unknown as [RunningLease, AbortSignal];
      return signal instanceof AbortSignal && signal === lease.signal;
    });
    expect(none).toMatchObject({ ok: true, value: true });
  });

  it('a handle from claim (no run) has no signal', async () => {
    const leases = createLeases(createMemoryStore(), { holder: 'worker', ttlMs: TTL_MS });
    const claimed = await leases.claim(KEY);
    if (!claimed.ok) throw new Error('expected a grant');
    expect(claimed.lease.signal).toBeNull();
  });

  it('loss before the first read: the signal read afterwards is already aborted, with the loss as its reason', async () => {
    const rig = createRig();
    const counter = countAbortControllers();
    let madeBeforeRead = -1;
    const outcome = rig.worker.withLease(KEY, async (lease) => {
      const refused = await rig.worker.checkpoint(lease, { step: 1 });
      madeBeforeRead = counter.made();
      const { signal } = lease;
      return {
        refused: refused.ok ? null : refused.reason,
        aborted: signal.aborted,
        reason: signal.reason as unknown,
        again: lease.signal === signal,
      };
    });
    // NOTE: the rival revokes before fn's checkpoint reaches the store: that refusal is the loss.
    await rig.rival.revoke(KEY, { reason: 'operator abort' });
    const result = await outcome;
    if (result.ok || result.reason !== 'lost' || result.returned === null)
      throw new Error(`expected lost with a returned value, got ${JSON.stringify(result)}`);
    expect(madeBeforeRead).toBe(0);
    expect(result.returned.value).toMatchObject({ refused: 'revoked', aborted: true, again: true });
    expect(result.returned.value.reason).toBeInstanceOf(LeaseLostError);
    expect(result.returned.value.reason).toBe(result.lost);
  });

  it('loss after the first read: the listener fires at once, when the refused renew answers', async () => {
    const rig = createRig();
    const outcome = rig.worker.withLease(KEY, async (lease) => {
      const at = await new Promise<number>((resolve) =>
        lease.signal.addEventListener('abort', () => resolve(rig.elapsed()), { once: true }),
      );
      return { at, reason: lease.signal.reason as unknown };
    });
    await vi.advanceTimersByTimeAsync(500);
    await rig.rival.revoke(KEY, { reason: 'operator abort' });
    await vi.advanceTimersByTimeAsync(1_000);
    const result = await outcome;
    if (result.ok || result.reason !== 'lost' || result.returned === null) throw new Error('expected lost with a returned value');
    expect(result.returned.value.at).toBe(callTimes(rig, 'renew')[0]);
    expect(result.returned.value.reason).toBe(result.lost);
  });

  it('a refused renew aborts the run at once, also when nobody has read the signal yet', async () => {
    const rig = createRig();
    const counter = countAbortControllers();
    const seen: { at: number; aborted: boolean; made: number }[] = [];
    const outcome = rig.worker.withLease(KEY, async (lease) => {
      await sleep(TTL_MS / 3 + 1);
      seen.push({ at: rig.elapsed(), aborted: false, made: counter.made() });
      const { signal } = lease;
      seen.push({ at: rig.elapsed(), aborted: signal.aborted, made: counter.made() });
      return signal.reason as unknown;
    });
    await vi.advanceTimersByTimeAsync(500);
    await rig.rival.revoke(KEY, { reason: 'operator abort' });
    await vi.advanceTimersByTimeAsync(TTL_MS / 3);
    const result = await outcome;
    const renewedAt = callTimes(rig, 'renew')[0] ?? Number.NaN;
    expect(renewedAt).toBeLessThanOrEqual(TTL_MS / 3);
    // NOTE: fn woke 1 ms after the refused renew: no AbortSignal had been made, and the first read finds it aborted.
    expect(seen).toEqual([
      { at: TTL_MS / 3 + 1, aborted: false, made: 0 },
      { at: TTL_MS / 3 + 1, aborted: true, made: 1 },
    ]);
    expect(result).toMatchObject({ ok: false, reason: 'lost', lost: { code: 'LEASE_LOST' }, released: false });
    if (!result.ok && result.reason === 'lost') expect(result.returned?.value).toBe(result.lost);
    expect(callTimes(rig, 'renew')).toHaveLength(1);
  });

  it('the caller signal (SIGTERM) before the first read: lease.signal is aborted with its reason; after: it fires', async () => {
    const rig = createRig();
    const early = new AbortController();
    const before = rig.worker.withLease(
      KEY,
      async (lease) => {
        await sleep(100);
        return { aborted: lease.signal.aborted, reason: lease.signal.reason as unknown };
      },
      { signal: early.signal },
    );
    await vi.advanceTimersByTimeAsync(50);
    early.abort('SIGTERM');
    await vi.advanceTimersByTimeAsync(100);
    expect(await before).toMatchObject({
      ok: false,
      reason: 'stopped',
      cause: 'SIGTERM',
      returned: { value: { aborted: true, reason: 'SIGTERM' } },
      released: true,
    });

    const late = new AbortController();
    const after = rig.worker.withLease(
      KEY,
      async (lease) => new Promise((resolve) => lease.signal.addEventListener('abort', () => resolve(lease.signal.reason), { once: true })),
      { signal: late.signal },
    );
    await vi.advanceTimersByTimeAsync(50);
    late.abort('SIGTERM');
    expect(await after).toMatchObject({ ok: false, reason: 'stopped', cause: 'SIGTERM', returned: { value: 'SIGTERM' }, released: true });
  });

  it('a refusal reported after the run ended aborts nothing', async () => {
    const leases = createLeases(createMemoryStore(), { holder: 'worker', ttlMs: TTL_MS });
    const result = await leases.withLease(KEY, async (lease) => lease);
    if (!result.ok) throw new Error('expected completed');
    const late = await leases.checkpoint(result.value, { step: 2 });
    expect(late).toMatchObject({ ok: false, reason: 'released' });
    expect(result.value.signal.aborted).toBe(false);
  });
});

describe('withLease: renewal timers are armed lazily', () => {
  it('runs that end before their first renewal share one arming timer and set none of their own, leaving no timer behind; a longer run renews on schedule', async () => {
    const rig = createRig();
    const holder = rig.worker.withLease(`${KEY}:holder`, async () => sleep(TTL_MS / 6));
    const runs = Array.from({ length: 20 }, (_, run) => rig.worker.withLease(`${KEY}:${run}`, async () => sleep(run * 10 + 1)));
    await vi.advanceTimersByTimeAsync(0);
    // NOTE: 21 overlapping runs: each sleeps (its own timer), and all share the one arming timer.
    expect(vi.getTimerCount()).toBe(21 + 1);
    await vi.advanceTimersByTimeAsync(TTL_MS / 6);
    for (const run of [holder, ...runs]) expect(await run).toMatchObject({ ok: true, released: true });
    expect(vi.getTimerCount()).toBe(0);
    expect(callTimes(rig, 'renew')).toEqual([]);

    const started = rig.elapsed();
    const long = rig.worker.withLease(KEY, async () => sleep(TTL_MS));
    await vi.advanceTimersByTimeAsync(TTL_MS);
    expect(await long).toMatchObject({ ok: true, released: true });
    expect(callTimes(rig, 'renew')).toEqual([started + TTL_MS / 3, started + (2 * TTL_MS) / 3]);
    await vi.advanceTimersByTimeAsync(TTL_MS);
    expect(vi.getTimerCount()).toBe(0);
  });

  it('a run started later with a shorter TTL moves the shared timer earlier: its renewal is on time', async () => {
    const rig = createRig();
    const long = rig.worker.withLease(`${KEY}:long`, async () => sleep(TTL_MS));
    await vi.advanceTimersByTimeAsync(10);
    const short = rig.worker.withLease(KEY, async () => sleep(TTL_MS / 3), { ttlMs: TTL_MS / 5 });
    await vi.advanceTimersByTimeAsync(TTL_MS);
    expect(await short).toMatchObject({ ok: true, released: true });
    expect(await long).toMatchObject({ ok: true, released: true });
    const renews = callTimes(rig, 'renew');
    expect(renews.slice(0, 2)).toEqual([10 + TTL_MS / 15, 10 + (2 * TTL_MS) / 15]);
    expect(renews).toContain(TTL_MS / 3);
  });
});
