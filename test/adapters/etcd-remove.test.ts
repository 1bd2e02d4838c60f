/**
 * `remove` on etcd (#24): one compare-and-swap replaces the record with a removal mark on a short etcd lease
 * (etcd deletes it by itself) and deletes its live key (revoking its etcd lease) and its submissions. Tokens after the key is created again stay
 * above every earlier token (they come from etcd's revision, not from the removed record); a remove delivered
 * twice, or racing another, is answered as decided once; watchers hear it; the key's now does not go back.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { createEtcdStore } from '../../src/adapters/etcd/index.js';
import { REMOVAL_MARK_SECONDS } from '../../src/adapters/etcd/record.js';
import type { Fence } from '../../src/fence/types.js';
import { newSecret } from '../../src/secret.js';
import { NO_ATTRIBUTES } from '../../src/validate.js';
import { intercepted, openEtcdRig, ttlOnceRevoked, type EtcdRig } from './etcd-rig.js';

let rig: EtcdRig | null = null;
const open = async (...args: Parameters<typeof openEtcdRig>): Promise<EtcdRig> => (rig = await openEtcdRig(...args));
afterEach(() => {
  rig?.close();
  rig = null;
});

async function claimFence(r: EtcdRig, key: string, holder = 'a', store = r.store): Promise<Fence> {
  const secret = newSecret();
  const outcome = await store.claim({ key, secret, holder, runId: null, ttlMs: 10_000, attributes: NO_ATTRIBUTES, recovering: false });
  if (!outcome.ok) throw new Error(`claim refused: ${outcome.reason}`);
  return { key, token: outcome.token, secret, holder, runId: null };
}

const removeCommand = (key: string, extra: { force?: boolean; expectedToken?: bigint | null } = {}) => ({
  key,
  force: extra.force ?? false,
  expectedToken: extra.expectedToken ?? null,
});

const keyAt = async (r: EtcdRig, name: string) => (await r.client.kv.range({ key: Buffer.from(`${r.prefix}${name}`, 'utf8') })).kvs[0];

describe('remove on etcd', () => {
  it('refuses missing, held (a live grant, no force) and superseded (another token) without writing', async () => {
    const r = await open();
    expect(await r.store.remove(removeCommand('job:1'))).toMatchObject({ ok: false, reason: 'missing', token: null });
    const fence = await claimFence(r, 'job:1');
    const revision = await r.modRevision('job:1');
    expect(await r.store.remove(removeCommand('job:1'))).toMatchObject({ ok: false, reason: 'held', token: fence.token });
    expect(await r.store.remove(removeCommand('job:1', { force: true, expectedToken: fence.token - 1n }))).toMatchObject({
      ok: false,
      reason: 'superseded',
      token: fence.token,
    });
    expect(await r.modRevision('job:1')).toBe(revision);
    expect(JSON.parse((await keyAt(r, 'lease/job:1'))!.value.toString('utf8')).removed).toBeUndefined();
  });

  it('with force deletes the record, the live key (its etcd lease revoked) and the submissions; the old holder is told missing', async () => {
    const r = await open();
    const fence = await claimFence(r, 'job:1');
    await r.store.fencedWrite(fence, () => undefined, { submission: { runId: 'r1', digest: 'd1', receiptJson: null, bindToGrant: false } });
    await r.store.setKeyState({ key: 'job:1', values: {}, by: 'ops', holdMs: 1_000 });
    expect(await keyAt(r, 'submissions/job:1')).toBeDefined();
    const lease = (await keyAt(r, 'live/job:1'))!.lease;
    const removed = await r.store.remove(removeCommand('job:1', { force: true, expectedToken: fence.token }));
    expect(removed).toMatchObject({ ok: true, token: fence.token, grant: { token: fence.token, holder: 'a', live: true } });
    expect(await keyAt(r, 'live/job:1')).toBeUndefined();
    expect(await keyAt(r, 'submissions/job:1')).toBeUndefined();
    expect(await ttlOnceRevoked(r, lease)).toBe(-1);
    // NOTE: the record's key holds the removal mark, on a short etcd lease of its own.
    const mark = (await keyAt(r, 'lease/job:1'))!;
    expect(JSON.parse(mark.value.toString('utf8'))).toEqual({
      v: 2,
      key: 'job:1',
      removed: true,
      stamp: r.clock(),
      applied: expect.any(Array),
    });
    const markTtl = Number((await r.client.leaseClient.leaseTimeToLive({ ID: mark.lease })).TTL);
    expect(markTtl).toBeGreaterThan(0);
    expect(markTtl).toBeLessThanOrEqual(REMOVAL_MARK_SECONDS);

    expect(await r.store.inspect('job:1')).toMatchObject({ exists: false, token: 0n, state: {}, heldUntil: null });
    expect((await r.store.list!({ prefix: '', limit: 10, cursor: null })).leases).toEqual([]);
    expect(await r.store.fencedWrite(fence, () => undefined)).toMatchObject({ ok: false, reason: 'missing' });
    expect(await r.store.renew({ fence, ttlMs: 1_000 })).toMatchObject({ ok: false, reason: 'missing' });
    expect(await r.store.release({ fence })).toMatchObject({ ok: false, reason: 'missing' });
    expect(await r.store.remove(removeCommand('job:1', { force: true }))).toMatchObject({ ok: false, reason: 'missing' });
  });

  it('tokens after the key is created again stay above every earlier token (from the revision), on two clients', async () => {
    const r = await open();
    const other = r.storeWith({});
    let highest = 0n;
    for (let round = 0; round < 12; round += 1) {
      const fence = await claimFence(r, 'job:1', 'a', round % 2 === 0 ? r.store : other);
      expect(fence.token > highest, `round ${round}: ${fence.token} after ${highest}`).toBe(true);
      highest = fence.token;
      if (round % 3 === 0) await r.store.setKeyState({ key: 'job:1', values: { rev: String(round) }, by: 'ops' });
      const removed = await (round % 2 === 0 ? other : r.store).remove(removeCommand('job:1', { force: true }));
      expect(removed).toMatchObject({ ok: true });
      // NOTE: a record created by setKeyState after a remove starts at token 0; the next claim still mints above.
      if (round % 4 === 1) await r.store.setKeyState({ key: 'job:1', values: { rev: 'x' }, by: 'ops' });
    }
    // NOTE: a re-created key starts with no submissions, state or hold from before.
    const last = await r.store.inspect('job:1');
    expect(last.grant === null || last.grant.token <= highest).toBe(true);
  });

  it('watchers are told when a record is removed', async () => {
    const r = await open({ hostClock: true });
    await claimFence(r, 'job:1');
    let told = 0;
    const stop = await r.store.watchFreed!('job:1', () => {
      told += 1;
    });
    try {
      await r.store.remove(removeCommand('job:1', { force: true }));
      for (const deadline = Date.now() + 5_000; told === 0 && Date.now() < deadline; )
        await new Promise((resolve) => setTimeout(resolve, 10));
      expect(told).toBeGreaterThan(0);
    } finally {
      stop();
    }
  });

  it('a remove delivered twice is answered as the one that applied (the removal mark keeps its id), not missing', async () => {
    const r = await open();
    const fence = await claimFence(r, 'job:1');
    let twice = true;
    const store = createEtcdStore({
      client: intercepted(r.client, async (request, send) => {
        if (!twice) return send(request);
        twice = false;
        await send(request);
        // NOTE: the re-sent copy finds the record gone: its compare fails.
        return send(request);
      }),
      prefix: r.prefix,
      clock: r.clock,
    });
    expect(await store.remove(removeCommand('job:1', { force: true }))).toMatchObject({ ok: true, token: fence.token });
    expect(await r.store.inspect('job:1')).toMatchObject({ exists: false });
  });

  it('two removes racing: one applies, the other is decided again on the fresh state and says missing', async () => {
    const r = await open();
    await claimFence(r, 'job:1');
    let interposed = false;
    let sent = 0;
    const store = createEtcdStore({
      client: intercepted(r.client, async (request, send) => {
        sent += 1;
        if (!interposed) {
          interposed = true;
          expect(await r.store.remove(removeCommand('job:1', { force: true }))).toMatchObject({ ok: true });
        }
        return send(request);
      }),
      prefix: r.prefix,
      clock: r.clock,
    });
    expect(await store.remove(removeCommand('job:1', { force: true }))).toMatchObject({ ok: false, reason: 'missing' });
    expect(sent).toBe(1);
  });

  it("a key's now does not go back across a remove: the mark keeps the removed record's stamp", async () => {
    const r = await open();
    await claimFence(r, 'job:1');
    const ahead = r.storeWith({ clock: () => r.clock() + 60_000 });
    const removed = await ahead.remove(removeCommand('job:1', { force: true }));
    expect(removed.now).toBe(r.clock() + 60_000);
    // NOTE: a client whose clock is a minute behind claims next: its now is the remove's.
    const claimed = await r.store.claim({
      key: 'job:1',
      secret: newSecret(),
      holder: 'b',
      runId: null,
      ttlMs: 1_000,
      attributes: NO_ATTRIBUTES,
      recovering: false,
    });
    expect(claimed).toMatchObject({ ok: true, acquiredAt: removed.now, now: removed.now });
  });
});

describe('the removal mark on etcd', () => {
  it('is deleted by etcd when its lease runs out; a claim that creates the record again detaches it from that lease', async () => {
    const r = await open();
    await claimFence(r, 'job:1');
    await claimFence(r, 'job:2');
    await r.store.remove(removeCommand('job:1', { force: true }));
    await r.store.remove(removeCommand('job:2', { force: true }));
    const again = await claimFence(r, 'job:2', 'b');
    expect((await keyAt(r, 'lease/job:2'))!.lease).toBe('0');
    // NOTE: what the mark's etcd lease running out does, at once.
    await r.client.leaseClient.leaseRevoke({ ID: (await keyAt(r, 'lease/job:1'))!.lease });
    expect(await keyAt(r, 'lease/job:1')).toBeUndefined();
    expect(await r.store.inspect('job:1')).toMatchObject({ exists: false });
    expect(await r.store.inspect('job:2')).toMatchObject({ exists: true, grant: { token: again.token } });
  });
});

describe('remove racing claims on four etcd clients', () => {
  it('tokens are never reissued across removes, and every fenced write commits under the grant the record held then', async () => {
    const r = await open({ hostClock: true });
    const key = 'job:race';
    const data = `${r.prefix.slice(0, -1)}-data/`;
    // NOTE: each on its own etcd3 client (its own gRPC channel), deciding on the host clock.
    const stores = [0, 1, 2, 3].map(() => r.storeWith({ clock: () => Date.now() }));
    const tokens: bigint[] = [];
    let done = false;
    let removed = 0;
    const remover = (async () => {
      for (let round = 0; round < 20; round += 1) {
        await new Promise((resolve) => setTimeout(resolve, Math.random() * 15));
        const outcome = await r.store.remove(removeCommand(key, { force: true }));
        if (outcome.ok) removed += 1;
      }
      done = true;
    })();
    const claimer = async (index: number) => {
      const store = stores[index]!;
      while (!done) {
        const secret = newSecret();
        const claimed = await store.claim({
          key,
          secret,
          holder: `c${index}`,
          runId: null,
          ttlMs: 10_000,
          attributes: NO_ATTRIBUTES,
          recovering: false,
        });
        if (!claimed.ok) continue;
        tokens.push(claimed.token);
        const fence: Fence = { key, token: claimed.token, secret, holder: `c${index}`, runId: null };
        await new Promise((resolve) => setTimeout(resolve, Math.random() * 5));
        await store.fencedWrite(fence, (tx) => tx.put(`${data}${claimed.token}`, String(claimed.token)));
        await store.release({ fence });
      }
    };
    await Promise.all([remover, ...stores.map((_, index) => claimer(index))]);
    expect(removed).toBeGreaterThan(0);
    expect(new Set(tokens).size).toBe(tokens.length);
    const { kvs } = await r.client.kv.range({ key: Buffer.from(data), range_end: Buffer.from(`${r.prefix.slice(0, -1)}-data0`) });
    expect(kvs.length).toBeGreaterThan(0);
    for (const entry of kvs) {
      const at = await r.client.kv.range({ key: Buffer.from(`${r.prefix}lease/${key}`), revision: entry.mod_revision });
      const record = JSON.parse(at.kvs[0]!.value.toString('utf8')) as { grant?: { token: string } | null };
      expect(record.grant?.token, `write at revision ${entry.mod_revision}`).toBe(entry.value.toString('utf8'));
    }
    // NOTE: in commit order, the writes' tokens increase: no write of an older grant after a newer one's.
    const inOrder = [...kvs]
      .sort((a, b) => Number(BigInt(a.mod_revision) - BigInt(b.mod_revision)))
      .map((entry) => BigInt(entry.value.toString('utf8')));
    expect(inOrder).toEqual([...inOrder].sort((a, b) => (a < b ? -1 : a > b ? 1 : 0)));
  }, 60_000);
});
