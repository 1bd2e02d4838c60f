/**
 * `withLease`, made deterministic: fake timers drive the worker's clock, the store's clock and the renewal
 * timers (one spec injects `timers` and `monotonicClock` instead). TTL 3 s, renew after a third.
 */
import { afterEach, describe, expect, it, vi } from 'vitest';
import { createMemoryStore } from '../../src/adapters/memory/index.js';
import { InvalidArgumentError, LeaseLostError, LeaseUnconfirmedError, StoreUnavailableError } from '../../src/errors.js';
import { createLeases } from '../../src/leases.js';
import type { Timers } from '../../src/timers.js';
import { MEMORY_EPOCH } from '../adapters/memory-harness.js';
import { spyOn } from './spy-store.js';
import { abortedAt, callTimes, controlledWork, createRig, sleep, TTL_MS } from './with-lease-rig.js';

const KEY = 'job:7';

afterEach(() => {
  vi.useRealTimers();
});

/** Renewal k (1-based) is due k thirds of the TTL after the claim; timers may round it down by a ms each time. */
function expectOnSchedule(times: readonly number[], count: number): void {
  expect(times).toHaveLength(count);
  times.forEach((at, index) => {
    const due = ((index + 1) * TTL_MS) / 3;
    expect(at).toBeLessThanOrEqual(due);
    expect(at).toBeGreaterThanOrEqual(due - (index + 1));
  });
}

describe('withLease', () => {
  it('renews on schedule, a third of the TTL after each request was sent, and releases at the end; no timer left', async () => {
    const rig = createRig();
    const outcome = rig.worker.withLease(KEY, async (_lease, signal) => {
      await sleep(5_500);
      return signal.aborted ? 'aborted' : 'done';
    });
    await vi.advanceTimersByTimeAsync(5_500);
    const result = await outcome;
    expect(result).toMatchObject({ ok: true, value: 'done', lost: null, released: true });
    expectOnSchedule(callTimes(rig, 'renew'), 5);
    expect((await rig.worker.inspect(KEY)).ending).toMatchObject({ kind: 'released', holder: 'worker' });
    expect(vi.getTimerCount()).toBe(0);
  });

  it('schedules from when the renew was sent, not when its slow reply arrived (conservative)', async () => {
    const rig = createRig();
    rig.renewLatencyMs = 400;
    const outcome = rig.worker.withLease(KEY, async () => sleep(3_500));
    await vi.advanceTimersByTimeAsync(4_000);
    expect((await outcome).ok).toBe(true);
    expectOnSchedule(callTimes(rig, 'renew'), 3);
    expect(vi.getTimerCount()).toBe(0);
  });

  it('aborts as soon as the next renew is refused after a revoke: the reason is a LeaseLostError (revoked)', async () => {
    const rig = createRig();
    const outcome = rig.worker.withLease(KEY, async (_lease, signal) => ({
      at: await abortedAt(rig, signal),
      reason: signal.reason as unknown,
    }));
    await vi.advanceTimersByTimeAsync(1_500);
    expect(await rig.rival.revoke(KEY, { reason: 'operator abort', by: 'alice' })).toMatchObject({ ok: true });
    await vi.advanceTimersByTimeAsync(1_000);
    const result = await outcome;
    if (result.ok || result.reason !== 'lost' || result.returned === null) throw new Error('expected the lease to be lost after fn ran');
    const { at, reason } = result.returned.value;
    expect(at).toBe(callTimes(rig, 'renew').at(-1));
    expect(at).toBeLessThanOrEqual(2_000);
    expect(reason).toBeInstanceOf(LeaseLostError);
    expect((reason as LeaseLostError).refusal).toMatchObject({
      reason: 'revoked',
      found: { ending: { kind: 'revoked', by: 'alice', reason: 'operator abort' } },
    });
    expect(result.lost).toBe(reason);
    expect(result.released).toBe(false);
    expect(vi.getTimerCount()).toBe(0);
  });

  it('aborts when the renew finds the lease superseded (the store clock ran ahead and a rival took over)', async () => {
    const rig = createRig();
    const outcome = rig.worker.withLease(KEY, async (_lease, signal) => {
      await abortedAt(rig, signal);
      return signal.reason as unknown;
    });
    await vi.advanceTimersByTimeAsync(1_500);
    rig.skewStore(TTL_MS);
    const taken = await rig.rival.claim(KEY);
    expect(taken.ok).toBe(true);
    await vi.advanceTimersByTimeAsync(1_000);
    const result = await outcome;
    if (result.ok || result.reason !== 'lost' || result.returned === null) throw new Error('expected the lease to be lost after fn ran');
    expect(result.returned.value).toBe(result.lost);
    expect(result.lost).toBeInstanceOf(LeaseLostError);
    expect((result.lost as LeaseLostError).refusal).toMatchObject({ reason: 'superseded', found: { holder: 'rival' } });
    expect((await rig.worker.inspect(KEY)).grant).toMatchObject({ holder: 'rival', live: true });
    expect(vi.getTimerCount()).toBe(0);
  });

  it('aborts with LeaseUnconfirmedError by the safe deadline, before the store could expire it, when the store is unreachable', async () => {
    const rig = createRig();
    const outcome = rig.worker.withLease(KEY, async (lease, signal) => ({
      at: await abortedAt(rig, signal),
      reason: signal.reason as unknown,
      expiresAt: lease.expiresAt,
    }));
    await vi.advanceTimersByTimeAsync(500);
    rig.down = true;
    await vi.advanceTimersByTimeAsync(3_000);
    const result = await outcome;
    if (result.ok || result.reason !== 'lost' || result.returned === null) throw new Error('expected the lease to be lost after fn ran');
    const { at, reason } = result.returned.value;
    expect(result.lost).toBe(reason);
    const safeDeadline = TTL_MS - Math.min(1_000, TTL_MS / 10);
    expect(at).toBe(safeDeadline);
    expect(at < TTL_MS).toBe(true);
    expect(reason).toBeInstanceOf(LeaseUnconfirmedError);
    expect((reason as LeaseUnconfirmedError).cause).toBeInstanceOf(StoreUnavailableError);
    expect(callTimes(rig, 'renew').length).toBeGreaterThan(1);
    expect(callTimes(rig, 'renew').every((time) => time < safeDeadline)).toBe(true);
    expect(result.released).toBe(false);
    expect(vi.getTimerCount()).toBe(0);
  });

  it('releases when fn throws, rethrows the error, leaves no timer', async () => {
    const rig = createRig();
    const outcome = rig.worker.withLease(KEY, async () => {
      await sleep(1_200);
      throw new Error('work failed');
    });
    const rejected = expect(outcome).rejects.toThrow('work failed');
    await vi.advanceTimersByTimeAsync(1_200);
    await rejected;
    expect((await rig.worker.inspect(KEY)).ending).toMatchObject({ kind: 'released' });
    expect(vi.getTimerCount()).toBe(0);
  });

  it('a renew still in flight when fn returns cannot resurrect the released lease', async () => {
    const rig = createRig();
    rig.renewLatencyMs = 500;
    const outcome = rig.worker.withLease(KEY, async () => sleep(1_200));
    await vi.advanceTimersByTimeAsync(2_000);
    const result = await outcome;
    expect(result).toMatchObject({ ok: true, released: true });
    const [renewAt] = callTimes(rig, 'renew');
    expect(renewAt).toBeLessThan(1_200);
    await vi.advanceTimersByTimeAsync(10_000);
    expect(rig.calls.at(-1)?.method).toBe('release');
    const seen = await rig.worker.inspect(KEY);
    expect(seen).toMatchObject({ grant: null, ending: { kind: 'released', holder: 'worker' } });
    expect((await rig.rival.claim(KEY)).ok).toBe(true);
    expect(vi.getTimerCount()).toBe(0);
  });

  it('returns the ClaimHeld value when the key is held, without running fn or arming a timer', async () => {
    const rig = createRig();
    const held = await rig.rival.claimOrThrow(KEY, { runId: 'r9' });
    const fn = vi.fn(async () => 'ran');
    const result = await rig.worker.withLease(KEY, fn);
    expect(result).toMatchObject({ ok: false, reason: 'held', holder: 'rival', runId: 'r9', token: held.token });
    expect(fn).not.toHaveBeenCalled();
    expect(vi.getTimerCount()).toBe(0);
  });

  it('returns the refusal when recovery is required, and passes recovering through to the claim', async () => {
    const rig = createRig();
    const lease = await rig.rival.claimOrThrow(KEY);
    await rig.rival.checkpointOrThrow(lease, { cursor: 3 });
    await rig.rival.revoke(KEY, { reason: 'abort', requireRecovery: true });
    expect(await rig.worker.withLease(KEY, async () => 'ran')).toMatchObject({ ok: false, reason: 'recovery-required' });
    const recovered = await rig.worker.withLease(KEY, async (mine) => (await rig.worker.recover(mine, 'resume')).ok, { recovering: true });
    expect(recovered).toMatchObject({ ok: true, value: true, released: true });
  });

  it('a lease without expiry neither renews nor arms a timer', async () => {
    const rig = createRig();
    const outcome = rig.worker.withLease(
      KEY,
      async () => {
        const timers = vi.getTimerCount();
        await sleep(10_000);
        return timers;
      },
      { ttlMs: null },
    );
    await vi.advanceTimersByTimeAsync(10_000);
    expect(await outcome).toMatchObject({ ok: true, value: 0, released: true });
    expect(callTimes(rig, 'renew')).toEqual([]);
  });

  it('uses the injected timers and monotonic clock', async () => {
    let now = 0;
    const queue: { at: number; id: number; callback: () => void }[] = [];
    let ids = 0;
    const timers: Timers = {
      setTimeout: (callback, ms) => {
        queue.push({ at: now + ms, id: ++ids, callback });
        return ids;
      },
      clearTimeout: (id) => {
        const index = queue.findIndex((timer) => timer.id === id);
        if (index >= 0) queue.splice(index, 1);
      },
    };
    const advance = async (ms: number) => {
      const end = now + ms;
      for (
        let next = queue.sort((a, b) => a.at - b.at)[0];
        next !== undefined && next.at <= end;
        next = queue.sort((a, b) => a.at - b.at)[0]
      ) {
        queue.splice(queue.indexOf(next), 1);
        now = next.at;
        next.callback();
        await new Promise((resolve) => setImmediate(resolve));
      }
      now = end;
    };
    const spy = spyOn(createMemoryStore({ clock: () => MEMORY_EPOCH + now }));
    const leases = createLeases(spy.store, { holder: 'worker', ttlMs: TTL_MS, monotonicClock: () => now });
    const { work, running, finish } = controlledWork();
    const outcome = leases.withLease(KEY, work, { timers });
    await running;
    await advance(3_500);
    finish();
    expect(await outcome).toMatchObject({ ok: true, lost: null, released: true });
    expect(spy.calls.filter((method) => method === 'renew')).toHaveLength(3);
    expect(queue).toEqual([]);
  });

  it.each([
    ['renewAfterFraction 0', { renewAfterFraction: 0 }],
    ['renewAfterFraction 1', { renewAfterFraction: 1 }],
    ['renewAfterFraction NaN', { renewAfterFraction: Number.NaN }],
    ['a negative safetyMarginMs', { safetyMarginMs: -1 }],
    ['a NaN safetyMarginMs', { safetyMarginMs: Number.NaN }],
    ['a retryDelayMs of 0', { retryDelayMs: 0 }],
    ['an infinite retryDelayMs', { retryDelayMs: Number.POSITIVE_INFINITY }],
  ])('refuses %s with InvalidArgumentError before claiming', async (_name, options) => {
    const spy = spyOn(createMemoryStore());
    const leases = createLeases(spy.store, { holder: 'worker', ttlMs: TTL_MS });
    await expect(leases.withLease(KEY, async () => 1, options)).rejects.toBeInstanceOf(InvalidArgumentError);
    expect(spy.calls).toEqual([]);
  });

  it('refuses a missing fn with InvalidArgumentError before claiming', async () => {
    const spy = spyOn(createMemoryStore());
    const leases = createLeases(spy.store, { holder: 'worker', ttlMs: TTL_MS });
    await expect(leases.withLease(KEY, undefined as unknown as () => Promise<void>)).rejects.toBeInstanceOf(InvalidArgumentError);
    expect(spy.calls).toEqual([]);
  });
});
