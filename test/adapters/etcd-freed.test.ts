/**
 * etcd wake-ups (`watchFreed`) on a real etcd: a watch on the lease record hears the releases and revokes
 * that end a grant and nothing else, is live when its promise resolves, wakes a waiting claim at once (no
 * polling), and is cancelled when its last watcher leaves.
 */
import { afterEach, describe, expect, it, vi } from 'vitest';
import { createEtcdStore, type EtcdClient } from '../../src/adapters/etcd/index.js';
import { createLeases } from '../../src/leases.js';
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
