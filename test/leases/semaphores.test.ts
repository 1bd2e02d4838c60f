/**
 * Semaphores through the public API (issue 25, section 2), on the memory store: `acquirePermit` gives a lease on a
 * permit's key that every fenced operation accepts; `full` lists the live holders and says when one may free; a
 * waiting acquire is woken by a release of a permit (no polling) or sleeps until `nextAt`; `withPermit` runs and
 * releases; the run's signal stops a waiting `withPermit`; bad input, a claim of a permit's key and a store without
 * semaphores are refused before any I/O; `acquirePermit` is traced on its diagnostics channel.
 */
import diagnostics_channel, { type TracingChannelSubscribers } from 'node:diagnostics_channel';
import { describe, expect, it } from 'vitest';
import { createManualClock } from '../../src/clock.js';
import { createMemoryStore } from '../../src/adapters/memory/index.js';
import { describeRefusal } from '../../src/describe.js';
import { InvalidArgumentError, isLeaseError, SemaphoreFullError, UnsupportedOperationError } from '../../src/errors.js';
import type { OperationEvent } from '../../src/events.js';
import { permitKey } from '../../src/fence/permits.js';
import { createLeases } from '../../src/leases.js';
import type { Store } from '../../src/store.js';
import { MEMORY_EPOCH } from '../adapters/memory-harness.js';
import { spyOn } from './spy-store.js';

const POOL = 'exports';
const MINUTE = 60_000;

function setup() {
  const clock = createManualClock(MEMORY_EPOCH);
  const store = createMemoryStore({ clock });
  const a = createLeases(store, { holder: 'a', ttlMs: 5 * MINUTE });
  const b = createLeases(store, { holder: 'b', ttlMs: 5 * MINUTE });
  return { clock, store, a, b };
}

/** Real time: the waiting tests sleep on timers. */
function realTime() {
  const store = createMemoryStore();
  return { store, a: createLeases(store, { holder: 'a', ttlMs: 5 * MINUTE }), b: createLeases(store, { holder: 'b', ttlMs: 5 * MINUTE }) };
}

describe('acquirePermit through the lease API', () => {
  it('grants up to the limit, each permit a lease with its own key and a token above every earlier one of the semaphore', async () => {
    const { a, b } = setup();
    const first = await a.acquirePermitOrThrow(POOL, { limit: 2, runId: 'r1' });
    const second = await b.acquirePermitOrThrow(POOL, { limit: 2 });
    expect([first.index, second.index]).toEqual([1, 2]);
    expect(first.lease.key).toBe(permitKey(POOL, 1));
    expect(second.lease.token).toBeGreaterThan(first.lease.token);
    expect(second).toMatchObject({ semaphore: POOL, limit: 2, live: 2, previous: null, checkpoint: null });
    // NOTE: a permit is an ordinary lease: fenced writes, checkpoints and renewals take its handle.
    expect(await a.fencedWrite(first.lease, () => 'written')).toMatchObject({ ok: true, value: 'written' });
    expect(await a.checkpoint(first.lease, { page: 3 })).toMatchObject({ ok: true });
    expect(await a.renew(first.lease)).toMatchObject({ ok: true });
    const full = await b.acquirePermit(POOL, { limit: 2 });
    expect(full).toMatchObject({ ok: false, reason: 'full', limit: 2, unavailable: [] });
    if (full.ok) return;
    expect(full.live.map((permit) => [permit.index, permit.holder, permit.runId])).toEqual([
      [1, 'a', 'r1'],
      [2, 'b', null],
    ]);
    expect(describeRefusal(full)).toMatch(/^semaphore exports full \(full: 2 of limit 2 live: permit 1 token 1 \(holder a, run r1\)/);
    await expect(b.acquirePermitOrThrow(POOL, { limit: 2 })).rejects.toSatisfy(
      (error) => error instanceof SemaphoreFullError && error.code === 'SEMAPHORE_FULL' && error.refusal.live.length === 2,
    );
  });

  it('a release frees a permit; an expired permit is taken over with its checkpoint', async () => {
    const { clock, a, b } = setup();
    const first = await a.acquirePermitOrThrow(POOL, { limit: 1, ttlMs: 1_000 });
    await a.checkpoint(first.lease, { page: 7 });
    clock.advance(1_000);
    const next = await b.acquirePermitOrThrow(POOL, { limit: 1 });
    expect(next).toMatchObject({ index: 1, previous: { kind: 'expired', holder: 'a' }, checkpoint: { value: { page: 7 } } });
    expect(await a.fencedWrite(first.lease, () => 'late')).toMatchObject({ ok: false, reason: 'superseded' });
    expect(await b.release(next.lease)).toMatchObject({ ok: true });
    expect(await a.acquirePermit(POOL, { limit: 1 })).toMatchObject({ ok: true, index: 1, previous: { kind: 'released' } });
  });

  it('a lower limit grants nothing until fewer than it are live; a claim of a permit key is refused before any I/O', async () => {
    const { store, a, b } = setup();
    const permits = [];
    for (let count = 0; count < 3; count += 1) permits.push(await a.acquirePermitOrThrow(POOL, { limit: 3 }));
    expect(await b.acquirePermit(POOL, { limit: 2 })).toMatchObject({ ok: false, reason: 'full', limit: 2 });
    await a.release((permits[2] as (typeof permits)[number]).lease);
    expect(await b.acquirePermit(POOL, { limit: 2 })).toMatchObject({ ok: false, reason: 'full' });
    await a.release((permits[0] as (typeof permits)[number]).lease);
    expect(await b.acquirePermit(POOL, { limit: 2 })).toMatchObject({ ok: true, index: 1, live: 2 });
    const spied = spyOn(store);
    const c = createLeases(spied.store, { holder: 'c' });
    await expect(c.claim(permitKey(POOL, 2))).rejects.toThrow(/is permit 2 of semaphore "exports": acquire it with acquirePermit/);
    await expect(c.withLease(permitKey(POOL, 1), async () => 1)).rejects.toBeInstanceOf(InvalidArgumentError);
    // NOTE: a key that only looks like a permit key (index 0, or past MAX_PERMITS) is an ordinary key.
    expect(await c.claim('{exports}:permit-0')).toMatchObject({ ok: true });
    expect(spied.calls).toEqual(['claim']);
  });

  it('refuses bad input before any store call', async () => {
    const { store } = setup();
    const spied = spyOn(store);
    const leases = createLeases(spied.store, { holder: 'a' });
    const bad: Array<[unknown, unknown]> = [
      ['', { limit: 1 }],
      ['a{b', { limit: 1 }],
      ['a}b', { limit: 1 }],
      [7, { limit: 1 }],
      [POOL, undefined],
      [POOL, {}],
      [POOL, { limit: 0 }],
      [POOL, { limit: 1.5 }],
      [POOL, { limit: 1001 }],
      [POOL, { limit: Number.NaN }],
      [POOL, { limit: '2' }],
      [POOL, { limit: 1, ttlMs: -1 }],
      [POOL, { limit: 1, recovering: 'yes' }],
      ['x'.repeat(1020), { limit: 1 }],
    ];
    for (const [name, options] of bad) {
      await expect(
        leases.acquirePermit(name as string, options as { limit: number }),
        `${String(name).slice(0, 20)} ${JSON.stringify(options)}`,
      ).rejects.toBeInstanceOf(InvalidArgumentError);
    }
    await expect(leases.withPermit(POOL, async () => 1, { limit: 0 })).rejects.toBeInstanceOf(InvalidArgumentError);
    expect(spied.calls).toEqual([]);
  });

  it('a store without semaphores: UnsupportedOperationError before any I/O', async () => {
    const { store } = setup();
    const { acquirePermit: _acquire, ...rest } = store;
    const without = spyOn({ ...rest, id: store.id } as Store);
    const leases = createLeases(without.store, { holder: 'a' });
    const error = await leases.acquirePermit(POOL, { limit: 1 }).catch((caught: unknown) => caught);
    expect(error).toBeInstanceOf(UnsupportedOperationError);
    expect(isLeaseError(error) && error.code).toBe('UNSUPPORTED_OPERATION');
    expect(without.calls).toEqual([]);
  });

  it('is traced on leasefence:acquirePermit: granted with the permit key, full with how many are live', async () => {
    const { a, b } = setup();
    const channel = diagnostics_channel.tracingChannel<OperationEvent, OperationEvent>('leasefence:acquirePermit');
    const seen: OperationEvent[] = [];
    const subscribers: Partial<TracingChannelSubscribers<OperationEvent>> = { asyncEnd: (event) => void seen.push(event) };
    channel.subscribe(subscribers as TracingChannelSubscribers<OperationEvent>);
    try {
      await a.acquirePermit(POOL, { limit: 1, runId: 'r1' });
      await b.acquirePermit(POOL, { limit: 1 });
    } finally {
      channel.unsubscribe(subscribers as TracingChannelSubscribers<OperationEvent>);
    }
    expect(seen.map((event) => [event.key, event.runId, event.outcome?.result])).toEqual([
      [POOL, 'r1', 'granted'],
      [POOL, null, 'full'],
    ]);
    expect(seen[0]?.outcome).toMatchObject({ item: permitKey(POOL, 1) });
    expect(seen[1]?.outcome).toMatchObject({ live: 1, reason: 'full' });
  });

  describe('waiting (real time)', () => {
    it('is woken by the release of a live permit (its notification), not by a poll', async () => {
      const { store, a, b } = realTime();
      const held = await a.acquirePermitOrThrow(POOL, { limit: 1 });
      const spied = spyOn(store);
      const waiter = createLeases(spied.store, { holder: 'w' });
      const started = performance.now();
      setTimeout(() => void a.release(held.lease), 60);
      const granted = await waiter.acquirePermit(POOL, { limit: 1, wait: { timeoutMs: 10_000, pollMs: 10_000, recheckMs: 10_000 } });
      expect(granted).toMatchObject({ ok: true, index: 1, previous: { kind: 'released' } });
      expect(performance.now() - started).toBeLessThan(5_000);
      // NOTE: one subscription (limit 1), then the refused attempt and the granted one: no poll in between.
      expect(spied.calls).toEqual(['watchFreed', 'acquirePermit', 'acquirePermit']);
      void b;
    });

    it('sleeps until nextAt (the live permit expires) when nothing is released', async () => {
      const { a, b } = realTime();
      await a.acquirePermitOrThrow(POOL, { limit: 1, ttlMs: 80 });
      const started = performance.now();
      const granted = await b.acquirePermit(POOL, { limit: 1, wait: { timeoutMs: 10_000, pollMs: 10_000, jitterMs: 0 } });
      expect(granted).toMatchObject({ ok: true, previous: { kind: 'expired' } });
      expect(performance.now() - started).toBeLessThan(5_000);
    });

    it('ends with the last full at its timeout, saying how long it waited', async () => {
      const { a, b } = realTime();
      await a.acquirePermitOrThrow(POOL, { limit: 1, ttlMs: null });
      const full = await b.acquirePermit(POOL, { limit: 1, wait: { timeoutMs: 120, pollMs: 30 } });
      expect(full).toMatchObject({ ok: false, reason: 'full', nextAt: null, waitEnded: 'timeout' });
      expect(!full.ok && full.waitedMs).toBeGreaterThanOrEqual(100);
    });
  });
});

describe('withPermit', () => {
  it('runs under a permit and releases it; full is returned as the outcome', async () => {
    const { a, b } = setup();
    const outcome = await a.withPermit(
      POOL,
      async (lease) => {
        const inner = await b.withPermit(POOL, async () => 'never', { limit: 1 });
        expect(inner).toMatchObject({ ok: false, reason: 'full', semaphore: POOL });
        return lease.key;
      },
      { limit: 1 },
    );
    expect(outcome).toMatchObject({ ok: true, value: permitKey(POOL, 1), released: true });
    expect(await b.acquirePermit(POOL, { limit: 1 })).toMatchObject({ ok: true, previous: { kind: 'released' } });
  });

  it('a waiting withPermit is stopped by its signal before a grant: stopped, nothing acquired', async () => {
    const { a, b } = realTime();
    await a.acquirePermitOrThrow(POOL, { limit: 1, ttlMs: null });
    const controller = new AbortController();
    setTimeout(() => controller.abort(new Error('shutdown')), 40);
    const outcome = await b.withPermit(POOL, async () => 'never', { limit: 1, wait: { timeoutMs: 10_000 }, signal: controller.signal });
    expect(outcome).toMatchObject({ ok: false, reason: 'stopped', key: POOL, lease: null });
  });
});
