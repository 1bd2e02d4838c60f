/**
 * Expiry on etcd's own timer (grant-lease.ts): each grant with a TTL has a live key on an etcd lease of
 * ceil(ttl / 1 s) + 1 seconds. Once etcd deletes it, the grant is expired whatever a client's clock says,
 * and an etcd expiry between a decision and its commit makes the commit lose its compare.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { createEtcdStore, type EtcdClient } from '../../src/adapters/etcd/index.js';
import { leaseSeconds } from '../../src/adapters/etcd/grant-lease.js';
import { createLeases } from '../../src/leases.js';
import { openEtcdRig, type EtcdRig } from './etcd-rig.js';

let rig: EtcdRig | null = null;
const open = async (): Promise<EtcdRig> => (rig = await openEtcdRig());
afterEach(() => {
  rig?.close();
  rig = null;
});

const liveKey = (r: EtcdRig, key: string): string => `${r.prefix}live/${key}`;

describe("expiry on etcd's timer", () => {
  it('a grant with a TTL has a live key with its token on an etcd lease of ceil(ttl / 1 s) + 1 s; release deletes it', async () => {
    const r = await open();
    const leases = r.leasesFor('a', 1_500);
    const lease = await leases.claimOrThrow('job:1');
    const found = (await r.client.kv.range({ key: Buffer.from(liveKey(r, 'job:1')) })).kvs[0];
    expect(found?.value.toString()).toBe(String(lease.token));
    const { TTL, grantedTTL } = await r.client.leaseClient.leaseTimeToLive({ ID: found!.lease });
    expect([Number(grantedTTL), leaseSeconds(1_500)]).toEqual([3, 3]);
    expect(Number(TTL)).toBeGreaterThan(0);

    r.clock.advance(500);
    await leases.renewOrThrow(lease);
    const renewed = (await r.client.kv.range({ key: Buffer.from(liveKey(r, 'job:1')) })).kvs[0];
    expect(renewed?.lease).not.toBe(found!.lease);

    await leases.release(lease);
    expect(await r.get(liveKey(r, 'job:1'))).toBeNull();
    const untimed = await leases.claimOrThrow('job:2', { ttlMs: null });
    expect(untimed.expiresAt).toBeNull();
    expect(await r.get(liveKey(r, 'job:2'))).toBeNull();
  });

  it('a client whose clock stands still sees the grant expire when etcd ends its lease', async () => {
    const r = await open();
    // NOTE: the rig's manual clock never moves here: by the clients' clocks the grant is young for ever.
    const holder = r.leasesFor('a', 1_000);
    const lease = await holder.claimOrThrow('job:1');
    expect(await r.leasesFor('b').claim('job:1')).toMatchObject({ ok: false, reason: 'held' });
    const deadline = Date.now() + 10_000;
    while ((await r.get(liveKey(r, 'job:1'))) !== null && Date.now() < deadline) await new Promise((resolve) => setTimeout(resolve, 100));
    expect(await r.get(liveKey(r, 'job:1'))).toBeNull();
    expect(await r.store.inspect('job:1')).toMatchObject({ grant: { token: lease.token, live: false }, now: lease.expiresAt });
    expect((await r.store.list!({ prefix: 'job:', limit: 10, cursor: null })).leases).toMatchObject([
      { key: 'job:1', grant: { live: false } },
    ]);
    const written = await holder.fencedWrite(lease, () => 'too late');
    expect(written).toMatchObject({ ok: false, reason: 'expired', now: lease.expiresAt });
    const taken = await r.leasesFor('b').claim('job:1');
    expect(taken).toMatchObject({ ok: true, previous: { kind: 'expired', token: lease.token } });
    // NOTE: Jepsen's etcd 3.4.3 finding: a lock holder whose lease ran out while it was paused kept acting.
    // Here the paused holder, back, is fenced by the token at the place the write lands.
    const data = `${r.prefix.slice(0, -1)}-data/`;
    expect(await holder.fencedWrite(lease, (tx) => tx.put(`${data}x`, 'paused holder'))).toMatchObject({ ok: false, reason: 'superseded' });
    if (!taken.ok) throw new Error('not taken');
    await r.leasesFor('b').fencedWriteOrThrow(taken.lease, (tx) => tx.put(`${data}x`, 'new holder'));
    expect(await r.get(`${data}x`)).toBe('new holder');
  });

  it("etcd's expiry between the decision and the commit makes the commit lose its compare: the write is refused, nothing lands", async () => {
    const r = await open();
    const lease = await r.leasesFor('a', 60_000).claimOrThrow('job:1');
    let expired = false;
    const client: EtcdClient = {
      kv: {
        range: (request) => r.client.kv.range(request),
        txn: async (request) => {
          if ((request.compare ?? []).length > 0 && !expired) {
            expired = true;
            // NOTE: what etcd's leader does when the grant's etcd lease runs out.
            await r.client.delete().key(liveKey(r, 'job:1'));
          }
          return r.client.kv.txn(request);
        },
      },
      leaseClient: r.client.leaseClient,
    };
    const store = createEtcdStore({ client, prefix: r.prefix, clock: r.clock });
    const data = `${r.prefix.slice(0, -1)}-data/`;
    const outcome = await createLeases(store, { holder: 'a' }).fencedWrite(lease, (tx) => tx.put(`${data}x`, 'x'));
    expect(outcome).toMatchObject({ ok: false, reason: 'expired' });
    expect(await r.read(data)).toEqual([]);
  });
});
