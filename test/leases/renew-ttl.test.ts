/**
 * `renew(lease)` without a `ttlMs` keeps the lease's own TTL: the one it was claimed with, or the last one a
 * renew set explicitly. A lease claimed with `ttlMs: null` never becomes an expiring one by a bare renew.
 */
import { describe, expect, it } from 'vitest';
import { createManualClock } from '../../src/clock.js';
import { createMemoryStore } from '../../src/adapters/memory/index.js';
import { createLeases } from '../../src/leases.js';
import { MEMORY_EPOCH } from '../adapters/memory-harness.js';

const KEY = 'job:ttl';

function setup() {
  const clock = createManualClock(MEMORY_EPOCH);
  const store = createMemoryStore({ clock });
  return { clock, worker: createLeases(store, { holder: 'worker' }), rival: createLeases(store, { holder: 'rival' }) };
}

describe('renew keeps the lease TTL', () => {
  it('a lease claimed with ttlMs: null stays unexpiring after a bare renew, and is not taken over later', async () => {
    const { clock, worker, rival } = setup();
    const lease = await worker.claimOrThrow(KEY, { ttlMs: null });
    expect(lease.ttlMs).toBeNull();
    expect(await worker.renew(lease)).toMatchObject({ ok: true, expiresAt: null });
    expect(lease.expiresAt).toBeNull();
    clock.advance(60_000);
    expect(await rival.claim(KEY)).toMatchObject({ ok: false, reason: 'held', holder: 'worker', expiresAt: null });
  });

  it('a 5 s lease renews for 5 s, not the 30 s default', async () => {
    const { clock, worker } = setup();
    const lease = await worker.claimOrThrow(KEY, { ttlMs: 5_000 });
    clock.advance(1_000);
    const renewed = await worker.renew(lease);
    expect(renewed).toMatchObject({ ok: true });
    if (renewed.ok) expect(renewed.expiresAt).toBe(renewed.now + 5_000);
  });

  it('an explicit renew ttlMs becomes the lease TTL for the next bare renew', async () => {
    const { clock, worker } = setup();
    const lease = await worker.claimOrThrow(KEY, { ttlMs: 5_000 });
    await worker.renewOrThrow(lease, { ttlMs: 10_000 });
    expect(lease.ttlMs).toBe(10_000);
    clock.advance(1_000);
    const renewed = await worker.renew(lease);
    if (!renewed.ok) throw new Error('expected the renew to succeed');
    expect(renewed.expiresAt).toBe(renewed.now + 10_000);
    await worker.renewOrThrow(lease, { ttlMs: null });
    await worker.renewOrThrow(lease);
    expect(lease.expiresAt).toBeNull();
  });

  it('a refused renew does not change the lease TTL', async () => {
    const { worker } = setup();
    const lease = await worker.claimOrThrow(KEY, { ttlMs: 5_000 });
    await worker.release(lease);
    expect(await worker.renew(lease, { ttlMs: 9_000 })).toMatchObject({ ok: false, reason: 'released' });
    expect(lease.ttlMs).toBe(5_000);
  });

  it('a restored handle keeps an unexpiring grant unexpiring, and renews an expiring one by the default TTL', async () => {
    const { clock, worker } = setup();
    const forever = await worker.claimOrThrow('job:forever', { ttlMs: null });
    const restoredForever = worker.restore(forever.export());
    expect(restoredForever.ttlMs).toBeNull();
    expect(await worker.renew(restoredForever)).toMatchObject({ ok: true, expiresAt: null });
    const short = await worker.claimOrThrow(KEY, { ttlMs: 5_000 });
    const restored = createLeases(worker.store, { holder: 'other', ttlMs: 7_000 }).restore(short.export());
    expect(restored.ttlMs).toBe(7_000);
    clock.advance(1_000);
    expect(await worker.renew(restored)).toMatchObject({ ok: true, expiresAt: MEMORY_EPOCH + 8_000 });
  });
});
