/**
 * etcd wake-ups (`watchFreed`) on a real etcd: a watch on the lease record hears the releases and revokes
 * that end a grant and nothing else, is live when its promise resolves, wakes a waiting claim at once (no
 * polling), and is cancelled when its last watcher leaves. The queue of waiting claims (record.ts `waiters`): a field
 * of the record only while somebody waits; a waiting claim's refusal, which puts the record with no grant of its own,
 * wakes no release watcher (each woken waiter would claim again and wake them all once more); a dequeue that leaves
 * the key to the next waiter wakes them, as a release does, and one that frees nobody does not.
 */
import { afterEach, describe, expect, it, vi } from 'vitest';
import { createEtcdStore, type EtcdClient } from '../../src/adapters/etcd/index.js';
import { createLeases } from '../../src/leases.js';
import type { ClaimCommand } from '../../src/fence/operations.js';
import { newSecret } from '../../src/secret.js';
import { expectOwnKeyWoken, expectReleaseAndRevokeHeard } from '../waiting-stores/freed-specs.js';
import { openEtcdRig, type EtcdRig } from './etcd-rig.js';

let rig: EtcdRig | null = null;
const open = async (...args: Parameters<typeof openEtcdRig>): Promise<EtcdRig> => (rig = await openEtcdRig(...args));
afterEach(() => {
  rig?.close();
  rig = null;
});

/** The rig's client with its watch builder instrumented: how many etcd watches are open. */
function countingWatches(r: EtcdRig): { client: EtcdClient; open: () => number } {
  let open = 0;
  const client: EtcdClient = {
    kv: r.client.kv,
    leaseClient: r.client.leaseClient,
    watch: () => {
      const builder = r.client.watch();
      return {
        key: (key) => ({
          create: async () => {
            const watcher = await builder.key(key).create();
            open += 1;
            return {
              on: (event: 'put' | 'delete' | 'connected' | 'error', listener: never) => watcher.on(event as 'put', listener),
              cancel: async () => {
                open -= 1;
                await watcher.cancel();
              },
            };
          },
        }),
      };
    },
  };
  return { client, open: () => open };
}

describe('etcd watchFreed', () => {
  it('hears the releases and revokes that end a grant, and nothing else', async () => {
    const r = await open({ hostClock: true });
    await expectReleaseAndRevokeHeard(r.store, r.leasesFor('a', 60_000), 'job:1');
  });

  it("wakes each key's own watchers only", async () => {
    const r = await open({ hostClock: true });
    const ends = await expectOwnKeyWoken(r.store, r.leasesFor('a', 60_000), ['job:a', 'job:b']);
    for (const end of ends) end();
  });

  it('wakes a waiting claim as soon as the holder releases, long before its expiry or any recheck', async () => {
    const r = await open({ hostClock: true });
    const holder = r.leasesFor('a', 60_000);
    const lease = await holder.claimOrThrow('job:1');
    const started = performance.now();
    const waiting = r.leasesFor('b', 60_000).claim('job:1', { wait: { timeoutMs: 20_000, recheckMs: 20_000 } });
    await new Promise((resolve) => setTimeout(resolve, 200));
    await holder.release(lease);
    const granted = await waiting;
    const waitedMs = performance.now() - started;
    expect(granted).toMatchObject({ ok: true, previous: { kind: 'released', token: lease.token } });
    expect(waitedMs).toBeLessThan(2_000);
  });

  it('shares one etcd watch per key and cancels it when the last watcher leaves', async () => {
    const r = await open({ hostClock: true });
    const { client, open: watches } = countingWatches(r);
    const store = createEtcdStore({ client, prefix: r.prefix });
    const ends = await Promise.all([1, 2, 3].map(() => store.watchFreed!('job:1', () => undefined)));
    expect(watches()).toBe(1);
    for (const end of ends) end();
    await vi.waitFor(() => expect(watches()).toBe(0), { timeout: 5_000, interval: 20 });
  });

  it('a client without watch gives a store without watchFreed (waiting claims retry on their schedule)', async () => {
    const r = await open();
    const store = createEtcdStore({ client: { kv: r.client.kv, leaseClient: r.client.leaseClient }, prefix: r.prefix });
    expect(store.watchFreed).toBeUndefined();
    expect(await createLeases(store, { holder: 'a' }).inspect('job:1')).toMatchObject({ exists: false });
  });
});

const claimOf = (key: string, holder: string, extra: Partial<ClaimCommand> = {}): ClaimCommand => ({
  key,
  holder,
  runId: null,
  secret: newSecret(),
  ttlMs: 60_000,
  attributes: {},
  recovering: false,
  ...extra,
});

const settle = (ms = 300): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));

describe('etcd: the queue of waiting claims and its wake-ups', () => {
  it('is a field of the record only while somebody waits', async () => {
    const r = await openEtcdRig();
    const raw = async (): Promise<Record<string, unknown>> => JSON.parse((await r.get(`${r.prefix}lease/job:1`)) ?? 'null');
    const first = claimOf('job:1', 'a');
    const granted = await r.store.claim(first);
    if (!granted.ok) throw new Error('not granted');
    expect(await raw()).not.toHaveProperty('waiters');
    expect(await r.store.claim(claimOf('job:1', 'b', { queue: { waiterIds: ['w1'], ttlMs: 5_000 } }))).toMatchObject({
      ok: false,
      reason: 'held',
    });
    const now = r.clock();
    expect(await raw()).toMatchObject({ waiters: [['w1', 'b', now, now + 5_000]], wake: false });
    expect((await r.store.inspect('job:1')).waiters).toEqual([{ waiterId: 'w1', holder: 'b', arrivedAt: now, expiresAt: now + 5_000 }]);
    await r.store.release({ fence: { key: 'job:1', token: granted.token, secret: first.secret, holder: 'a', runId: null } });
    expect(await r.store.claim(claimOf('job:1', 'b', { queue: { waiterIds: ['w1'], ttlMs: 5_000 } }))).toMatchObject({ ok: true });
    const after = await raw();
    expect(after).not.toHaveProperty('waiters');
    expect(after).not.toHaveProperty('wake');
  });

  it('wakes release watchers on a dequeue that frees the key, not on a waiting claim refused or a dequeue freeing nobody', async () => {
    const r = await openEtcdRig();
    let woken = 0;
    const end = await r.store.watchFreed!('job:1', () => {
      woken += 1;
    });
    try {
      const first = claimOf('job:1', 'a');
      const granted = await r.store.claim(first);
      if (!granted.ok) throw new Error('not granted');
      await r.store.claim(claimOf('job:1', 'b', { queue: { waiterIds: ['w1'], ttlMs: 60_000 } }));
      await r.store.release({ fence: { key: 'job:1', token: granted.token, secret: first.secret, holder: 'a', runId: null } });
      await expect.poll(() => woken, { timeout: 5_000 }).toBe(1);
      // NOTE: the key is free but w1 is first: each of these refusals puts the record (the queue changes) with no grant.
      expect(await r.store.claim(claimOf('job:1', 'c', { queue: { waiterIds: ['w2'], ttlMs: 60_000 } }))).toMatchObject({
        reason: 'queued',
        position: 2,
      });
      expect(await r.store.claim(claimOf('job:1', 'c', { queue: { waiterIds: ['w2', 'w3'], ttlMs: 60_000 } }))).toMatchObject({
        reason: 'queued',
        waiting: 3,
      });
      expect(await r.store.dequeue({ key: 'job:1', waiterIds: ['w3'] })).toMatchObject({ removed: 1, freed: false });
      await settle();
      expect(woken).toBe(1);
      expect(await r.store.dequeue({ key: 'job:1', waiterIds: ['w1'] })).toMatchObject({ removed: 1, freed: true });
      await expect.poll(() => woken, { timeout: 5_000 }).toBe(2);
      // NOTE: the last waiter leaving frees nobody (nobody waits): no wake-up.
      expect(await r.store.dequeue({ key: 'job:1', waiterIds: ['w2'] })).toMatchObject({ removed: 1, freed: false });
      await settle();
      expect(woken).toBe(2);
    } finally {
      end();
    }
  });
});
