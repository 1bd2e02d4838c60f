/**
 * `withLease` hears an operator's revoke at once (issue 29 item 5), on the memory store: the signal aborts
 * within milliseconds with the real refusal, not at the next renewal; a notice nobody's revoke sent costs
 * one renew and aborts nothing; the watch ends with the run. The PostgreSQL and Redis clients are in
 * test/waiting-stores/revoke-notice.test.ts.
 */
import { afterEach, describe, expect, it, vi } from 'vitest';
import { createMemoryStore } from '../../src/adapters/memory/index.js';
import type { LeaseLostError } from '../../src/errors.js';
import { createLeases } from '../../src/leases.js';
import type { Store } from '../../src/store.js';
import { callTimes, createRig, sleep } from './with-lease-rig.js';
import { expectForgedNoticeCostsOneCheck, measureRevokeToAbort, noticeRig } from '../waiting-stores/revoke-notice-specs.js';

/** A memory store whose holders' notices can also be sent by hand (the memory store has no outside channel). */
function forgeable(): { store: Store; forge: (key: string) => Promise<void>; watched: () => number } {
  const memory = createMemoryStore();
  const listeners = new Map<string, Set<() => void>>();
  const store: Store = {
    ...memory,
    watchRevoked: async (key, onRevoked) => {
      const set = listeners.get(key) ?? new Set();
      listeners.set(key, set);
      set.add(onRevoked);
      const end = await memory.watchRevoked!(key, onRevoked);
      return () => {
        set.delete(onRevoked);
        end();
      };
    },
  };
  const forge = async (key: string): Promise<void> => {
    for (const listener of listeners.get(key) ?? []) listener();
  };
  const watched = (): number => [...listeners.values()].reduce((sum, set) => sum + set.size, 0);
  return { store, forge, watched };
}

afterEach(() => {
  vi.useRealTimers();
});

describe('withLease hears a revoke at once (memory)', () => {
  it('on fake time: a revoke at 500 ms aborts the signal at 500 ms after one renew, not at the renewal due at 1,000 ms', async () => {
    const rig = createRig({ revokeNotices: true });
    const seen: number[] = [];
    const outcome = rig.worker.withLease('job:notice', async (_lease, signal) => {
      signal.addEventListener('abort', () => seen.push(rig.elapsed()), { once: true });
      await sleep(5_000);
      return 'finished anyway';
    });
    await vi.advanceTimersByTimeAsync(500);
    await rig.rival.revoke('job:notice', { reason: 'operator abort', by: 'ops' });
    await vi.advanceTimersByTimeAsync(0);
    expect(seen).toEqual([500]);
    expect(callTimes(rig, 'renew')).toEqual([500]);
    await vi.advanceTimersByTimeAsync(5_000);
    const result = await outcome;
    expect(result).toMatchObject({ ok: false, reason: 'lost', returned: { value: 'finished anyway' } });
    if (!result.ok && result.reason === 'lost')
      expect((result.lost as LeaseLostError).refusal).toMatchObject({
        reason: 'revoked',
        found: { ending: { kind: 'revoked', reason: 'operator abort', by: 'ops' } },
      });
    expect(vi.getTimerCount()).toBe(0);
  });

  it('the signal aborts within milliseconds of the revoke, with the refusal revoked, its reason and by', async () => {
    const figures = await measureRevokeToAbort(createMemoryStore(), 'memory', 50);
    console.log(
      `memory: revoke -> abort over ${figures.runs} runs: p50 ${figures.p50.toFixed(2)} ms, p99 ${figures.p99.toFixed(2)} ms, max ${figures.max.toFixed(2)} ms`,
    );
    expect(figures.p99).toBeLessThan(250);
  });

  it('a forged notice costs one renew and never aborts a live lease; a flood costs at most one renew per 100 ms', async () => {
    const { store, forge } = forgeable();
    await expectForgedNoticeCostsOneCheck(store, 'forged', () => forge('forged'));
  });

  it('the watch ends with the run, whether it completed, threw or was revoked', async () => {
    const { store, watched } = forgeable();
    const leases = createLeases(store, { holder: 'worker', ttlMs: 60_000 });
    await leases.withLease('ends', async () => 'ok');
    await expect(leases.withLease('ends', async () => Promise.reject(new Error('boom')))).rejects.toThrow('boom');
    const revoked = await leases.withLease('ends', async (lease, signal) => {
      await new Promise((resolve) => setTimeout(resolve, 0));
      await createLeases(store, { holder: 'ops' }).revoke('ends', { reason: 'r', by: 'ops', expectedToken: lease.token });
      if (!signal.aborted) await new Promise((resolve) => signal.addEventListener('abort', resolve, { once: true }));
    });
    expect(revoked).toMatchObject({ ok: false, reason: 'lost' });
    expect(watched()).toBe(0);
  });

  it('a lease without expiry (nothing to renew on a schedule) hears its revoke too, and the check keeps it unexpiring', async () => {
    const store = createMemoryStore();
    const leases = createLeases(store, { holder: 'worker', ttlMs: null });
    const outcome = await leases.withLease('forever', async (lease, signal) => {
      await createLeases(store, { holder: 'ops' }).revoke('forever', { reason: 'moved', by: 'ops', expectedToken: lease.token });
      if (!signal.aborted) await new Promise((resolve) => signal.addEventListener('abort', resolve, { once: true }));
      return 'stopped';
    });
    expect(outcome).toMatchObject({ ok: false, reason: 'lost', lost: { refusal: { reason: 'revoked' } } });
    const { store: forgeableStore, forge } = forgeable();
    const rig = noticeRig(forgeableStore);
    const live = rig.watching('forever:forged');
    const kept = await createLeases(rig.store, { holder: 'worker', ttlMs: null }).withLease('forever:forged', async (lease) => {
      await live;
      await forge('forever:forged');
      await vi.waitFor(() => expect(rig.renews()).toBe(1), { timeout: 2_000, interval: 5 });
      return lease.expiresAt;
    });
    expect(kept).toMatchObject({ ok: true, value: null });
    expect((await forgeableStore.inspect('forever:forged')).ending).toMatchObject({ kind: 'released' });
  });

  it('a store without watchRevoked runs withLease as before', async () => {
    const { watchRevoked: _dropped, ...plain } = createMemoryStore();
    const leases = createLeases(plain, { holder: 'worker', ttlMs: 60_000 });
    expect(await leases.withLease('plain', async () => 'ok')).toMatchObject({ ok: true, value: 'ok', released: true });
  });
});
