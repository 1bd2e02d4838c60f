/**
 * `withLease` tells the truth: a loss is reported as `lost` (with its LeaseLostError / LeaseUnconfirmedError)
 * however `fn` ended, a refusal inside `fn` is the loss at once, the caller's signal stops the work, the final
 * release carries the caller's checkpoint decision, and long TTLs never overflow a timer.
 */
import { setTimeout as sleepWithSignal } from 'node:timers/promises';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { createMemoryStore } from '../../src/adapters/memory/index.js';
import { InvalidArgumentError, LeaseLostError, LeaseUnconfirmedError } from '../../src/errors.js';
import type { Lease } from '../../src/lease.js';
import { createLeases } from '../../src/leases.js';
import type { Leases } from '../../src/leases-types.js';
import { MAX_TTL_MS } from '../../src/validate.js';
import type { WithLeaseOptions } from '../../src/leases-types.js';
import { MEMORY_EPOCH } from '../adapters/memory-harness.js';
import { spyOn } from './spy-store.js';
import { callTimes, controlledWork, createQueueTimers, createRig, sleep, TTL_MS } from './with-lease-rig.js';

const KEY = 'job:9';
const MAX_TIMER_MS = 2 ** 31 - 1;

afterEach(() => {
  vi.useRealTimers();
});

describe('withLease reports a loss as lost', () => {
  it('fn rejecting with the AbortError of an aborted setTimeout(ms, v, { signal }) is the loss, not an error', async () => {
    const rig = createRig();
    const outcome = rig.worker.withLease(KEY, async (_lease, signal) => sleepWithSignal(60_000, 'late', { signal }));
    await vi.advanceTimersByTimeAsync(500);
    await rig.rival.revoke(KEY, { reason: 'operator abort' });
    await vi.advanceTimersByTimeAsync(1_000);
    const result = await outcome;
    expect(result).toMatchObject({ ok: false, reason: 'lost', key: KEY, returned: null, released: false });
    if (result.ok || result.reason !== 'lost') return;
    expect(result.lost).toBeInstanceOf(LeaseLostError);
    expect((result.lost as LeaseLostError).refusal).toMatchObject({ reason: 'revoked' });
    expect(vi.getTimerCount()).toBe(0);
  });

  it('fn rejecting with the LeaseUnconfirmedError itself (signal.throwIfAborted) is the loss', async () => {
    const rig = createRig();
    const outcome = rig.worker.withLease(KEY, async (_lease, signal) => {
      for (;;) {
        signal.throwIfAborted();
        await sleep(100);
      }
    });
    await vi.advanceTimersByTimeAsync(500);
    rig.down = true;
    await vi.advanceTimersByTimeAsync(3_000);
    const result = await outcome;
    expect(result).toMatchObject({ ok: false, reason: 'lost', returned: null });
    if (!result.ok && result.reason === 'lost') expect(result.lost).toBeInstanceOf(LeaseUnconfirmedError);
  });

  it('a genuine error of fn still propagates, also after the signal aborted', async () => {
    const rig = createRig();
    const outcome = rig.worker.withLease(KEY, async (_lease, signal) => {
      await new Promise((resolve) => signal.addEventListener('abort', resolve, { once: true }));
      throw new TypeError('bug in the cleanup');
    });
    const rejected = expect(outcome).rejects.toThrow('bug in the cleanup');
    await vi.advanceTimersByTimeAsync(500);
    await rig.rival.revoke(KEY, { reason: 'x' });
    await vi.advanceTimersByTimeAsync(1_000);
    await rejected;
    expect(vi.getTimerCount()).toBe(0);
  });

  type Refused = (leases: Leases, lease: Lease) => Promise<unknown>;
  it.each<[string, Refused]>([
    ['fenced write', (leases, lease) => leases.fencedWrite(lease, () => 'x')],
    ['fenced write with a checkpoint', (leases, lease) => leases.fencedWrite(lease, () => 'x', { checkpoint: { step: 2 } })],
    ['checkpoint', (leases, lease) => leases.checkpoint(lease, { step: 2 })],
    ['renew', (leases, lease) => leases.renew(lease)],
  ])('a %s refused inside fn aborts the signal at once with a LeaseLostError, and the outcome is lost', async (_name, operate) => {
    const rig = createRig();
    const seen: { aborted: boolean; at: number }[] = [];
    const outcome = rig.worker.withLease(KEY, async (lease, signal) => {
      await sleep(600);
      await operate(rig.worker as unknown as Leases, lease);
      seen.push({ aborted: signal.aborted, at: rig.elapsed() });
      return 'finished anyway';
    });
    await vi.advanceTimersByTimeAsync(500);
    await rig.rival.revoke(KEY, { reason: 'operator abort' });
    await vi.advanceTimersByTimeAsync(200);
    const result = await outcome;
    expect(seen).toEqual([{ aborted: true, at: 600 }]);
    expect(callTimes(rig, 'renew').filter((at) => at !== 600)).toEqual([]);
    expect(result).toMatchObject({ ok: false, reason: 'lost', returned: { value: 'finished anyway' } });
    if (!result.ok && result.reason === 'lost') expect((result.lost as LeaseLostError).refusal).toMatchObject({ reason: 'revoked' });
    expect(vi.getTimerCount()).toBe(0);
  });

  it('fencedWriteOrThrow refused inside fn: the LeaseLostError it throws ends fn and the outcome is lost', async () => {
    const rig = createRig();
    const outcome = rig.worker.withLease(KEY, async (lease) => {
      await sleep(600);
      return rig.worker.fencedWriteOrThrow(lease, () => 'x');
    });
    await vi.advanceTimersByTimeAsync(500);
    await rig.rival.revoke(KEY, { reason: 'operator abort' });
    await vi.advanceTimersByTimeAsync(200);
    expect(await outcome).toMatchObject({ ok: false, reason: 'lost', returned: null, lost: { code: 'LEASE_LOST' } });
  });

  it('an attribute mismatch is not a loss: the grant is still current', async () => {
    const rig = createRig();
    const outcome = rig.worker.withLease(KEY, async (lease, signal) => {
      const refused = await rig.worker.fencedWrite(lease, () => 'x', { attributes: { model: 'v2' } });
      return { refused: refused.ok ? null : refused.reason, aborted: signal.aborted };
    });
    await vi.advanceTimersByTimeAsync(10);
    expect(await outcome).toMatchObject({ ok: true, value: { refused: 'attribute-mismatch', aborted: false }, lost: null, released: true });
  });
});

describe('withLease stops on the caller signal', () => {
  it('an already aborted signal claims nothing', async () => {
    const spy = spyOn(createMemoryStore());
    const leases = createLeases(spy.store, { holder: 'worker', ttlMs: TTL_MS });
    const fn = vi.fn(async () => 1);
    const result = await leases.withLease(KEY, fn, { signal: AbortSignal.abort('shutdown') });
    expect(result).toMatchObject({
      ok: false,
      reason: 'stopped',
      key: KEY,
      lease: null,
      cause: 'shutdown',
      returned: null,
      released: false,
    });
    expect(fn).not.toHaveBeenCalled();
    expect(spy.calls).toEqual([]);
  });

  it('aborted while the claim is in flight: fn never runs, the fresh grant is released, the outcome is stopped with it', async () => {
    const shutdown = new AbortController();
    const memory = createMemoryStore();
    const store = new Proxy(memory, {
      get(target, property) {
        const value: unknown = Reflect.get(target, property, target);
        if (property !== 'claim' || typeof value !== 'function') return value;
        return async (...args: unknown[]) => {
          shutdown.abort('SIGTERM');
          return (value as (...params: unknown[]) => unknown).apply(target, args);
        };
      },
    });
    const leases = createLeases(store, { holder: 'worker', ttlMs: TTL_MS });
    const fn = vi.fn(async () => 1);
    const result = await leases.withLease(KEY, fn, { signal: shutdown.signal });
    expect(result).toMatchObject({ ok: false, reason: 'stopped', cause: 'SIGTERM', returned: null, released: true });
    if (!result.ok && result.reason === 'stopped') expect(result.lease?.key).toBe(KEY);
    expect(fn).not.toHaveBeenCalled();
    expect((await leases.inspect(KEY)).ending).toMatchObject({ kind: 'released', holder: 'worker' });
  });

  it('aborting it (SIGTERM) aborts fn with its reason, stops renewing, releases, and reports stopped', async () => {
    const rig = createRig();
    const shutdown = new AbortController();
    const outcome = rig.worker.withLease(KEY, async (_lease, signal) => sleepWithSignal(60_000, 'never', { signal }), {
      signal: shutdown.signal,
    });
    await vi.advanceTimersByTimeAsync(1_500);
    shutdown.abort('SIGTERM');
    const result = await outcome;
    expect(result).toMatchObject({ ok: false, reason: 'stopped', cause: 'SIGTERM', lost: null, returned: null, released: true });
    expect((await rig.worker.inspect(KEY)).ending).toMatchObject({ kind: 'released', holder: 'worker' });
    await vi.advanceTimersByTimeAsync(10_000);
    expect(callTimes(rig, 'renew')).toHaveLength(1);
    expect(vi.getTimerCount()).toBe(0);
  });
});

describe('withLease final checkpoint', () => {
  const finishWith = async (finalCheckpoint: unknown, fail = false) => {
    const rig = createRig();
    const lease = await rig.worker.claimOrThrow(KEY);
    await rig.worker.release(lease, { checkpoint: { cursor: 1 } });
    const options: WithLeaseOptions = finalCheckpoint === 'omit' ? {} : { finalCheckpoint };
    const run = rig.worker.withLease(
      KEY,
      async () => {
        if (fail) throw new Error('work failed');
        return 'done';
      },
      options,
    );
    await (fail ? expect(run).rejects.toThrow('work failed') : expect(run).resolves.toMatchObject({ ok: true, released: true }));
    return (await rig.worker.inspect(KEY)).checkpoint?.value ?? null;
  };

  it('keeps it by default, clears it with null, replaces it with a value', async () => {
    expect(await finishWith('omit')).toEqual({ cursor: 1 });
    expect(await finishWith(null)).toBeNull();
    expect(await finishWith({ cursor: 'done' })).toEqual({ cursor: 'done' });
  });

  it('keeps it when fn threw, whatever the option says', async () => {
    expect(await finishWith(null, true)).toEqual({ cursor: 1 });
  });
});

describe('withLease timers and bad input', () => {
  it('a TTL longer than setTimeout can count (1 year) never asks for a delay over 2^31-1 ms and renews on schedule', async () => {
    const clock = createQueueTimers();
    const spy = spyOn(createMemoryStore({ clock: () => MEMORY_EPOCH + clock.now() }));
    const leases = createLeases(spy.store, { holder: 'worker', ttlMs: MAX_TTL_MS, monotonicClock: clock.now });
    const { work, running, finish } = controlledWork();
    const outcome = leases.withLease(KEY, work, { timers: clock.timers });
    await running;
    await clock.advance(10 * 24 * 3_600_000);
    expect(spy.calls.filter((method) => method === 'renew')).toEqual([]);
    await clock.advance(MAX_TTL_MS / 3);
    expect(spy.calls.filter((method) => method === 'renew')).toHaveLength(1);
    finish();
    expect(await outcome).toMatchObject({ ok: true, released: true });
    expect(Math.max(...clock.delays)).toBeLessThanOrEqual(MAX_TIMER_MS);
    expect(clock.pending()).toBe(0);
  });

  it.each<[string, WithLeaseOptions]>([
    ['a timers object without clearTimeout', { timers: { setTimeout: () => 1 } as never }],
    ['timers that are not an object', { timers: 'fake' as never }],
    ['a signal that is not an AbortSignal', { signal: { aborted: false } as never }],
    ['a final checkpoint that is not JSON', { finalCheckpoint: { at: 1n } }],
    ['a final checkpoint over maxCheckpointBytes', { finalCheckpoint: 'x'.repeat(100) }],
  ])('refuses %s with InvalidArgumentError before claiming', async (_name, options) => {
    const spy = spyOn(createMemoryStore());
    const leases = createLeases(spy.store, { holder: 'worker', ttlMs: TTL_MS, maxCheckpointBytes: 64 });
    await expect(leases.withLease(KEY, async () => 1, options)).rejects.toBeInstanceOf(InvalidArgumentError);
    expect(spy.calls).toEqual([]);
  });

  it('refuses a non-function fn with InvalidArgumentError before claiming', async () => {
    const spy = spyOn(createMemoryStore());
    const leases = createLeases(spy.store, { holder: 'worker', ttlMs: TTL_MS });
    await expect(leases.withLease(KEY, 'run' as never)).rejects.toMatchObject({ code: 'INVALID_ARGUMENT' });
    expect(spy.calls).toEqual([]);
  });
});
