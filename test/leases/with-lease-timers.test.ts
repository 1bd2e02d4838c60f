/**
 * Property: whatever the TTL (up to a year) and however long the work runs, `withLease` never asks a timer
 * for more than setTimeout can count (2^31-1 ms) and renews exactly on its schedule, a third of the TTL
 * after each renewal was sent: no renew storm, no missed renewal, no timer left behind.
 */
import { fc, test } from '@fast-check/vitest';
import { expect } from 'vitest';
import { createMemoryStore } from '../../src/adapters/memory/index.js';
import { createLeases } from '../../src/leases.js';
import { MAX_TTL_MS } from '../../src/validate.js';
import { MEMORY_EPOCH } from '../adapters/memory-harness.js';
import { spyOn } from './spy-store.js';
import { controlledWork, createQueueTimers } from './with-lease-rig.js';

const MAX_TIMER_MS = 2 ** 31 - 1;

test.prop([fc.integer({ min: 3_000, max: MAX_TTL_MS }), fc.integer({ min: 0, max: 6 })], { numRuns: 60 })(
  'renews k times in (k + 1/2) thirds of any TTL, with every timer delay at most 2^31-1 ms',
  async (ttlMs, renewals) => {
    const clock = createQueueTimers();
    const spy = spyOn(createMemoryStore({ clock: () => MEMORY_EPOCH + clock.now() }));
    const leases = createLeases(spy.store, { holder: 'worker', ttlMs, monotonicClock: clock.now });
    const { work, running, finish } = controlledWork();
    const outcome = leases.withLease('job:timers', work, { timers: clock.timers });
    await running;
    await clock.advance(Math.floor(((renewals + 0.5) * ttlMs) / 3));
    finish();
    expect(await outcome).toMatchObject({ ok: true, released: true });
    expect(spy.calls.filter((method) => method === 'renew')).toHaveLength(renewals);
    expect(Math.max(...clock.delays)).toBeLessThanOrEqual(MAX_TIMER_MS);
    expect(clock.pending()).toBe(0);
  },
);

test.prop([fc.integer({ min: 3_000, max: MAX_TTL_MS }), fc.double({ min: 0, max: 0.99, noNaN: true })], { numRuns: 30 })(
  'until its first renewal is due, a run keeps one timer armed, not two',
  async (ttlMs, fractionOfFirstThird) => {
    const clock = createQueueTimers();
    const leases = createLeases(createMemoryStore({ clock: () => MEMORY_EPOCH + clock.now() }), {
      holder: 'worker',
      ttlMs,
      monotonicClock: clock.now,
    });
    const { work, running, finish } = controlledWork();
    const outcome = leases.withLease('job:one-timer', work, { timers: clock.timers });
    await running;
    await clock.advance(Math.floor((fractionOfFirstThird * ttlMs) / 3));
    expect(clock.pending()).toBe(1);
    finish();
    expect(await outcome).toMatchObject({ ok: true, released: true });
    expect(clock.pending()).toBe(0);
  },
);
