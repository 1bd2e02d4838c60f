/**
 * etcd-only guarantees, beyond the shared suites: fenced writes of etcd data in the fence's transaction,
 * strict expiry on the store's clock, a key's now that never goes back whichever client decides, secrets at
 * rest, bad input refused before any I/O, and etcd tokens accepted by the token gates.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { createEtcdStore, MAX_WRITE_OPERATIONS, type EtcdClient } from '../../src/adapters/etcd/index.js';
import { createMemoryTokenGate } from '../../src/adapters/memory/index.js';
import { isLeaseError } from '../../src/errors.js';
import { createLeases } from '../../src/leases.js';
import { openEtcdRig, type EtcdRig } from './etcd-rig.js';

let rig: EtcdRig | null = null;
const open = async (...args: Parameters<typeof openEtcdRig>): Promise<EtcdRig> => (rig = await openEtcdRig(...args));
afterEach(() => {
  rig?.close();
  rig = null;
});

const json = (value: unknown): string => JSON.stringify(value, (_, v: unknown) => (typeof v === 'bigint' ? `${v}n` : v));

describe('fenced writes of etcd data', () => {
  it('puts and deletes commit with the fence check: all of them under the current grant, none under a stale one', async () => {
    const r = await open();
    const data = `${r.prefix.slice(0, -1)}-data/`;
    const leases = r.leasesFor('a', 1_000);
    const lease = await leases.claimOrThrow('job:1');
    await r.client.put(`${data}old`).value('to delete');
    const outcome = await leases.fencedWrite(lease, (tx) => {
      tx.put(`${data}result`, `done by ${tx.token}`);
      tx.put(new TextEncoder().encode(`${data}bytes`), new Uint8Array([1, 2, 3]));
      tx.delete(`${data}old`);
      return 'value';
    });
    expect(outcome).toMatchObject({ ok: true, value: 'value', token: lease.token });
    expect(await r.get(`${data}result`)).toBe(`done by ${lease.token}`);
    expect((await r.client.get(`${data}bytes`).buffer())?.toJSON().data).toEqual([1, 2, 3]);
    expect(await r.get(`${data}old`)).toBeNull();

    r.clock.advance(1_000);
    const next = await r.leasesFor('b').claimOrThrow('job:1');
    let ran = false;
    const stale = await leases.fencedWrite(lease, (tx) => {
      ran = true;
      tx.put(`${data}result`, 'stale');
    });
    expect(stale).toMatchObject({ ok: false, reason: 'superseded', expected: { token: lease.token }, found: { token: next.token } });
    expect(ran).toBe(false);
    expect(await r.get(`${data}result`)).toBe(`done by ${lease.token}`);
  });

  it('an async callback is awaited, and its operations still commit with the check', async () => {
    const r = await open();
    const leases = r.leasesFor('a');
    const lease = await leases.claimOrThrow('job:1');
    const key = `${r.prefix.slice(0, -1)}-data/async`;
    await leases.fencedWriteOrThrow(
      lease,
      async (tx) => {
        await new Promise((resolve) => setTimeout(resolve, 5));
        tx.put(key, 'later');
      },
      { checkpoint: { step: 1 } },
    );
    expect(await r.get(key)).toBe('later');
    expect((await r.store.inspect('job:1')).checkpoint).toMatchObject({ json: '{"step":1}', token: lease.token });
  });

  it('refuses before sending: keys under the store prefix, a key twice, too many operations, a call after the callback returned', async () => {
    const r = await open();
    const leases = r.leasesFor('a');
    const lease = await leases.claimOrThrow('job:1');
    const before = await r.modRevision('job:1');
    const data = `${r.prefix.slice(0, -1)}-data/`;
    const refused = async (write: Parameters<typeof leases.fencedWrite>[1]): Promise<unknown> =>
      leases.fencedWrite(lease, write).catch((error: unknown) => error);
    expect(isLeaseError(await refused((tx) => tx.put(`${r.prefix}lease/job:1`, '{}')), 'INVALID_ARGUMENT')).toBe(true);
    expect(
      isLeaseError(
        await refused((tx) => {
          tx.put(`${data}x`, '1');
          tx.delete(`${data}x`);
        }),
        'INVALID_ARGUMENT',
      ),
    ).toBe(true);
    expect(isLeaseError(await refused((tx) => tx.put('', '1')), 'INVALID_ARGUMENT')).toBe(true);
    expect(isLeaseError(await refused((tx) => tx.put(`${data}x`, 1 as unknown as string)), 'INVALID_ARGUMENT')).toBe(true);
    const many = await refused((tx) => {
      for (let i = 0; i <= MAX_WRITE_OPERATIONS; i += 1) tx.put(`${data}${i}`, 'x');
    });
    expect(isLeaseError(many, 'INVALID_ARGUMENT')).toBe(true);
    expect(await r.read(data)).toEqual([]);
    expect(await r.modRevision('job:1')).toBe(before);

    let escaped: { put(key: string, value: string): void } | null = null;
    await leases.fencedWriteOrThrow(lease, (tx) => {
      escaped = tx;
    });
    expect(() => escaped!.put(`${data}late`, 'x')).toThrow(/after the callback returned/);
    expect(await r.get(`${data}late`)).toBeNull();
  });

  it('a throwing callback applies nothing: no data, no checkpoint, the record as it was', async () => {
    const r = await open();
    const leases = r.leasesFor('a');
    const lease = await leases.claimOrThrow('job:1');
    const before = await r.modRevision('job:1');
    const boom = new Error('boom');
    const data = `${r.prefix.slice(0, -1)}-data/`;
    await expect(
      leases.fencedWrite(
        lease,
        (tx) => {
          tx.put(`${data}half`, 'x');
          throw boom;
        },
        { checkpoint: { step: 1 } },
      ),
    ).rejects.toBe(boom);
    expect(await r.read(data)).toEqual([]);
    expect(await r.modRevision('job:1')).toBe(before);
  });
});

describe("time: the deciding client's clock, never earlier than the record's last change", () => {
  it('strict expiry: one ms before expires-at the grant writes; at expires-at it is expired and another may claim', async () => {
    const r = await open();
    const leases = r.leasesFor('a', 1_000);
    const lease = await leases.claimOrThrow('job:1');
    expect(lease.expiresAt).toBe(r.clock() + 1_000);
    r.clock.advance(999);
    expect(await leases.fencedWrite(lease, () => 'in time')).toMatchObject({ ok: true, value: 'in time' });
    r.clock.advance(1);
    expect(await leases.fencedWrite(lease, () => 'late')).toMatchObject({ ok: false, reason: 'expired' });
    expect(await r.leasesFor('b').claim('job:1')).toMatchObject({ ok: true, lease: { token: expect.any(BigInt) } });
  });

  it('a client whose clock lags sees the now of the last change, not its own earlier time', async () => {
    const r = await open();
    const leases = r.leasesFor('a', 1_000);
    const lease = await leases.claimOrThrow('job:1');
    const lagging = r.storeWith({ clock: () => r.clock() - 60_000 });
    const seen = await lagging.inspect('job:1');
    expect(seen.now).toBe(lease.acquiredAt);
    // NOTE: the lagging client judges the grant live at the claim's now, and refuses its own claim accordingly.
    expect(await r.leasesFor('b', 1_000, lagging).claim('job:1')).toMatchObject({ ok: false, reason: 'held', now: lease.acquiredAt });
  });

  it('a takeover fences the old holder whatever its clock says (the takeover changed the record it is judged on)', async () => {
    const r = await open();
    const slow = createManualClock0();
    const oldStore = r.storeWith({ clock: slow });
    const old = r.leasesFor('a', 1_000, oldStore);
    const lease = await old.claimOrThrow('job:1');
    r.clock.set(lease.expiresAt!);
    await r.leasesFor('b').claimOrThrow('job:1');
    // The old holder's clock never moved: by it, its grant is still young.
    expect(await old.fencedWrite(lease, () => 'stale')).toMatchObject({ ok: false, reason: 'superseded' });
  });
});

/** A clock stuck at the rig's epoch (the old holder's view of time in the takeover test). */
function createManualClock0(): () => number {
  const start = rig!.clock();
  return () => start;
}

describe('secrets at rest', () => {
  it('the record keeps the SHA-256 of the secret, never the secret, and inspect shows neither', async () => {
    const r = await open();
    const lease = await r.leasesFor('a').claimOrThrow('job:1');
    const { secret } = lease.fence();
    const raw = (await r.get(`${r.prefix}lease/job:1`))!;
    const { createHash } = await import('node:crypto');
    expect(raw).toContain(createHash('sha256').update(secret).digest('hex'));
    expect(raw).not.toContain(secret);
    expect(json(await r.store.inspect('job:1'))).not.toContain(secret);
  });
});

describe('bad input is refused before any I/O', () => {
  it('createEtcdStore checks its options', () => {
    const no = (): Promise<never> => Promise.reject(new Error('no'));
    const client = { kv: { range: no, txn: no }, leaseClient: { leaseGrant: no, leaseRevoke: no } };
    const refusals: unknown[] = [
      undefined,
      null,
      {},
      { client: {} },
      { client: { kv: {} } },
      { client: { kv: client.kv } },
      { client, prefix: '' },
      { client, prefix: 42 },
      { client, prefix: 'x'.repeat(257) },
      { client, clock: 'now' },
    ];
    for (const options of refusals) {
      expect(() => createEtcdStore(options as never), json(options)).toThrow(expect.objectContaining({ code: 'INVALID_ARGUMENT' }));
    }
    const throwing = new Proxy(
      {},
      {
        get: () => {
          throw new Error('trap');
        },
      },
    );
    expect(() => createEtcdStore(throwing as never)).toThrow(expect.objectContaining({ code: 'INVALID_ARGUMENT' }));
  });

  it('a bad key, TTL or fence never reaches etcd', async () => {
    let calls = 0;
    const sent = async (): Promise<never> => {
      calls += 1;
      throw new Error('sent');
    };
    const counting: EtcdClient = { kv: { range: sent, txn: sent }, leaseClient: { leaseGrant: sent, leaseRevoke: sent } };
    const leases = createLeases(createEtcdStore({ client: counting }), { holder: 'a', ttlMs: 1_000 });
    for (const attempt of [
      () => leases.claim(''),
      () => leases.claim('k', { ttlMs: -1 }),
      () => leases.claim(7 as unknown as string),
      () => leases.inspect(''),
    ]) {
      expect(isLeaseError(await attempt().catch((error: unknown) => error), 'INVALID_ARGUMENT')).toBe(true);
    }
    expect(calls).toBe(0);
  });

  it('a clock that returns something other than epoch ms is refused', async () => {
    const r = await open();
    const store = r.storeWith({ clock: () => Number.NaN });
    expect(isLeaseError(await store.inspect('job:1').catch((error: unknown) => error), 'INVALID_ARGUMENT')).toBe(true);
  });
});

describe('token gates accept etcd tokens', () => {
  it('a memory token gate orders etcd grants: the newer token writes, the older one is refused', async () => {
    const r = await open();
    const gate = createMemoryTokenGate();
    const first = await r.leasesFor('a', 1_000).claimOrThrow('job:1');
    r.clock.advance(1_000);
    const second = await r.leasesFor('b').claimOrThrow('job:1');
    expect(second.token > first.token).toBe(true);
    expect(await gate.write('report', second.fence(), ({ token }) => token)).toMatchObject({ ok: true, value: second.token });
    expect(await gate.write('report', first.fence(), () => 'stale')).toMatchObject({ ok: false, reason: 'stale-token' });
    expect(await gate.inspect('report')).toMatchObject({ found: { key: 'job:1', token: second.token } });
  });
});
