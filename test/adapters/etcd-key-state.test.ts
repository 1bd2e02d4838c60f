/**
 * Key state and holds on etcd (#24): `setKeyState` changes the record in one compare-and-swap and, when a
 * changed value ends the grant, deletes the grant's live key and revokes its etcd lease as a revoke does;
 * claims check `expect` and the hold; `release` holds back; `inspect` and `list` show both; watchers hear a
 * change that ends a grant. The race: setKeyState against claimers on four clients, checked on etcd's own
 * history (every fenced write under a grant bound to a value committed at a revision where the key had it).
 */
import { afterEach, describe, expect, it } from 'vitest';
import type { Fence } from '../../src/fence/types.js';
import { newSecret } from '../../src/secret.js';
import { NO_ATTRIBUTES } from '../../src/validate.js';
import { openEtcdRig, ttlOnceRevoked, type EtcdRig } from './etcd-rig.js';

let rig: EtcdRig | null = null;
const open = async (...args: Parameters<typeof openEtcdRig>): Promise<EtcdRig> => (rig = await openEtcdRig(...args));
afterEach(() => {
  rig?.close();
  rig = null;
});

const claimCommand = (key: string, holder: string, extra: { expect?: Record<string, string | null>; ttlMs?: number } = {}) => ({
  key,
  secret: newSecret(),
  holder,
  runId: null,
  ttlMs: extra.ttlMs ?? 10_000,
  attributes: NO_ATTRIBUTES,
  recovering: false,
  ...(extra.expect === undefined ? {} : { expect: extra.expect }),
});

/** Claims `key` on `r.store` and returns its fence (the claim must be granted). */
async function claimFence(r: EtcdRig, key: string, holder = 'a', extra: Parameters<typeof claimCommand>[2] = {}): Promise<Fence> {
  const command = claimCommand(key, holder, extra);
  const outcome = await r.store.claim(command);
  if (!outcome.ok) throw new Error(`claim refused: ${outcome.reason}`);
  return { key, token: outcome.token, secret: command.secret, holder, runId: null };
}

const liveKeyOf = async (r: EtcdRig, key: string) =>
  (await r.client.kv.range({ key: Buffer.from(`${r.prefix}live/${key}`, 'utf8') })).kvs[0];

describe('setKeyState on etcd', () => {
  it('sets and removes values; an unchanged value writes nothing and keeps the grant', async () => {
    const r = await open();
    const fence = await claimFence(r, 'doc:1');
    const set = await r.store.setKeyState({ key: 'doc:1', values: { rev: '1', tier: 'a' }, by: 'scanner' });
    expect(set).toMatchObject({ ok: true, state: { rev: '1', tier: 'a' }, changed: ['rev', 'tier'], heldUntil: null });
    // NOTE: a grant that was live was ended by that change; claim again and leave the state as it is.
    expect(set.ended).toMatchObject({
      kind: 'state-changed',
      token: fence.token,
      by: 'scanner',
      change: { name: 'rev', from: null, to: '1' },
    });
    const second = await claimFence(r, 'doc:1', 'b');
    const revision = await r.modRevision('doc:1');
    const same = await r.store.setKeyState({ key: 'doc:1', values: { rev: '1' }, by: 'scanner' });
    expect(same).toMatchObject({ ok: true, changed: [], ended: null, state: { rev: '1', tier: 'a' } });
    expect(await r.modRevision('doc:1')).toBe(revision);
    expect((await r.store.inspect('doc:1')).grant).toMatchObject({ token: second.token, live: true });
    const removed = await r.store.setKeyState({ key: 'doc:1', values: { tier: null }, by: 'scanner' });
    expect(removed).toMatchObject({
      changed: ['tier'],
      state: { rev: '1' },
      ended: { kind: 'state-changed', change: { name: 'tier', from: 'a', to: null } },
    });
    expect((await r.store.inspect('doc:1')).state).toEqual({ rev: '1' });
  });

  it('a changed value ends the grant: its holder is refused state-changed, its live key is deleted and its etcd lease revoked', async () => {
    const r = await open();
    await r.store.setKeyState({ key: 'doc:1', values: { rev: '1' }, by: 'scanner' });
    const fence = await claimFence(r, 'doc:1', 'a', { expect: { rev: '1' } });
    const live = await liveKeyOf(r, 'doc:1');
    expect(live?.value.toString('utf8')).toBe(fence.token.toString());
    const lease = live!.lease;
    const ended = await r.store.setKeyState({ key: 'doc:1', values: { rev: '2' }, by: 'scanner' });
    expect(ended.ended).toMatchObject({
      kind: 'state-changed',
      token: fence.token,
      holder: 'a',
      change: { name: 'rev', from: '1', to: '2' },
    });
    expect(await liveKeyOf(r, 'doc:1')).toBeUndefined();
    // NOTE: the revoke is sent after the commit, without waiting for it.
    expect(await ttlOnceRevoked(r, lease)).toBe(-1);
    let ran = false;
    const write = await r.store.fencedWrite(fence, () => {
      ran = true;
    });
    expect(write).toMatchObject({
      ok: false,
      reason: 'state-changed',
      attribute: { name: 'rev', expected: '1', found: '2' },
    });
    expect(ran).toBe(false);
    expect(await r.store.renew({ fence, ttlMs: 10_000 })).toMatchObject({ ok: false, reason: 'state-changed' });
  });

  it('a change after the grant expired records it expired (the etcd timer or the clock), as a takeover would', async () => {
    const r = await open();
    const fence = await claimFence(r, 'doc:1', 'a', { ttlMs: 1_000 });
    r.clock.advance(1_000);
    const set = await r.store.setKeyState({ key: 'doc:1', values: { rev: '1' }, by: 'scanner' });
    expect(set.ended).toMatchObject({ kind: 'expired', token: fence.token });
    expect(await liveKeyOf(r, 'doc:1')).toBeUndefined();
  });

  it('on a key with no record, creates one with token 0; the next claim still mints from the revision', async () => {
    const r = await open();
    const set = await r.store.setKeyState({ key: 'doc:new', values: { rev: '1' }, by: 'scanner', holdMs: 0 });
    expect(set).toMatchObject({ ok: true, changed: ['rev'], ended: null });
    expect(await r.store.inspect('doc:new')).toMatchObject({ exists: true, token: 0n, state: { rev: '1' }, grant: null });
    const revision = await r.modRevision('doc:new');
    const fence = await claimFence(r, 'doc:new');
    expect(fence.token > revision).toBe(true);
  });
});

describe('claim expect and holds on etcd', () => {
  it('expect: refused state-mismatch naming the first differing value (nothing written), granted when every value matches', async () => {
    const r = await open();
    await r.store.setKeyState({ key: 'doc:1', values: { rev: '3', tier: 'b' }, by: 'scanner' });
    const revision = await r.modRevision('doc:1');
    const refused = await r.store.claim(claimCommand('doc:1', 'a', { expect: { tier: 'a', rev: '2' } }));
    expect(refused).toMatchObject({ ok: false, reason: 'state-mismatch', field: { name: 'rev', expected: '2', found: '3' } });
    const absent = await r.store.claim(claimCommand('doc:1', 'a', { expect: { rev: '3', owner: 'x' } }));
    expect(absent).toMatchObject({ ok: false, reason: 'state-mismatch', field: { name: 'owner', expected: 'x', found: null } });
    expect(await r.modRevision('doc:1')).toBe(revision);
    expect(await r.store.claim(claimCommand('doc:1', 'a', { expect: { rev: '3', owner: null } }))).toMatchObject({ ok: true });
  });

  it('release with holdMs holds the key back until then; inspect and list show it; the next grant clears it', async () => {
    const r = await open();
    const fence = await claimFence(r, 'job:1');
    expect(await r.store.release({ fence, holdMs: 5_000 })).toMatchObject({ ok: true });
    const until = r.clock() + 5_000;
    expect(await r.store.claim(claimCommand('job:1', 'b'))).toMatchObject({
      ok: false,
      reason: 'held-back',
      heldUntil: until,
      token: fence.token,
    });
    expect(await r.store.inspect('job:1')).toMatchObject({ heldUntil: until, state: {} });
    const page = await r.store.list!({ prefix: 'job:', limit: 10, cursor: null });
    expect(page.leases).toMatchObject([{ key: 'job:1', heldUntil: until }]);
    r.clock.advance(4_999);
    expect(await r.store.claim(claimCommand('job:1', 'b'))).toMatchObject({ ok: false, reason: 'held-back' });
    r.clock.advance(1);
    expect((await r.store.inspect('job:1')).heldUntil).toBeNull();
    const next = await claimFence(r, 'job:1', 'b');
    expect(next.token > fence.token).toBe(true);
    expect(JSON.parse((await r.get(`${r.prefix}lease/job:1`))!).heldUntil).toBeNull();
  });

  it('setKeyState holds and cancels a hold; a hold alone keeps the grant; the state shows in list', async () => {
    const r = await open();
    const fence = await claimFence(r, 'job:1');
    const held = await r.store.setKeyState({ key: 'job:1', values: {}, by: 'ops', holdMs: 60_000 });
    expect(held).toMatchObject({ changed: [], ended: null, heldUntil: r.clock() + 60_000 });
    expect((await r.store.inspect('job:1')).grant).toMatchObject({ token: fence.token, live: true });
    await r.store.release({ fence });
    expect(await r.store.claim(claimCommand('job:1', 'b'))).toMatchObject({ ok: false, reason: 'held-back' });
    await r.store.setKeyState({ key: 'job:1', values: { tier: 'canary' }, by: 'ops', holdMs: null });
    const page = await r.store.list!({ prefix: '', limit: 10, cursor: null });
    expect(page.leases).toMatchObject([{ key: 'job:1', heldUntil: null, state: { tier: 'canary' } }]);
    expect(await r.store.claim(claimCommand('job:1', 'b'))).toMatchObject({ ok: true });
  });
});

describe('watchers on etcd', () => {
  it('are told when setKeyState ends a grant, not when it keeps it', async () => {
    const r = await open({ hostClock: true });
    await claimFence(r, 'job:1');
    let told = 0;
    const stop = await r.store.watchFreed!('job:1', () => {
      told += 1;
    });
    try {
      await r.store.setKeyState({ key: 'job:1', values: {}, by: 'ops', holdMs: 1_000 });
      await new Promise((resolve) => setTimeout(resolve, 200));
      expect(told).toBe(0);
      await r.store.setKeyState({ key: 'job:1', values: { rev: '2' }, by: 'ops' });
      for (const deadline = Date.now() + 5_000; told === 0 && Date.now() < deadline; )
        await new Promise((resolve) => setTimeout(resolve, 10));
      expect(told).toBeGreaterThan(0);
    } finally {
      stop();
    }
  });
});

describe('setKeyState racing claims on four etcd clients', () => {
  it('every fenced write under a grant claimed with expect {rev: v} commits at a revision where the key has rev v', async () => {
    const r = await open({ hostClock: true });
    const key = 'doc:race';
    const data = `${r.prefix.slice(0, -1)}-data/`;
    // NOTE: each on its own etcd3 client (its own gRPC channel), deciding on the host clock.
    const stores = [0, 1, 2, 3].map(() => r.storeWith({ clock: () => Date.now() }));
    await r.store.setKeyState({ key, values: { rev: '0' }, by: 'writer' });
    let done = false;
    const tally = { granted: 0, mismatched: 0, written: 0, fenced: 0, ended: 0 };
    const writer = (async () => {
      for (let rev = 1; rev <= 25; rev += 1) {
        await new Promise((resolve) => setTimeout(resolve, Math.random() * 15));
        const set = await r.store.setKeyState({ key, values: { rev: String(rev) }, by: 'writer' });
        expect(set.changed).toEqual(['rev']);
        if (set.ended !== null) tally.ended += 1;
      }
      done = true;
    })();
    const claimer = async (index: number) => {
      const store = stores[index]!;
      let writes = 0;
      while (!done) {
        const rev = (await store.inspect(key)).state.rev!;
        const command = claimCommand(key, `c${index}`, { expect: { rev } });
        const claimed = await store.claim(command);
        if (!claimed.ok) {
          if (claimed.reason === 'state-mismatch') tally.mismatched += 1;
          continue;
        }
        tally.granted += 1;
        const fence: Fence = { key, token: claimed.token, secret: command.secret, holder: `c${index}`, runId: null };
        await new Promise((resolve) => setTimeout(resolve, Math.random() * 5));
        const written = await store.fencedWrite(fence, (tx) => tx.put(`${data}${index}/${++writes}`, rev));
        if (written.ok) tally.written += 1;
        else {
          expect(written).toMatchObject({ reason: 'state-changed', attribute: { name: 'rev', expected: rev } });
          tally.fenced += 1;
        }
        await store.release({ fence });
      }
    };
    await Promise.all([writer, ...stores.map((_, index) => claimer(index))]);
    expect(tally.written).toBeGreaterThan(0);
    expect(tally.written + tally.fenced).toBe(tally.granted);
    // NOTE: etcd's history: the record as it stood at each write's commit revision.
    const { kvs } = await r.client.kv.range({ key: Buffer.from(data), range_end: Buffer.from(`${r.prefix.slice(0, -1)}-data0`) });
    expect(kvs.length).toBe(tally.written);
    for (const entry of kvs) {
      const at = await r.client.kv.range({ key: Buffer.from(`${r.prefix}lease/${key}`), revision: entry.mod_revision });
      const record = JSON.parse(at.kvs[0]!.value.toString('utf8')) as { state: Record<string, string>; grant: { holder: string } | null };
      expect(record.state.rev, `write ${entry.key.toString()} at revision ${entry.mod_revision}`).toBe(entry.value.toString('utf8'));
      expect(record.grant?.holder).toBe(`c${entry.key.toString().slice(data.length).split('/')[0]}`);
    }
    expect((await r.store.inspect(key)).state).toEqual({ rev: '25' });
  }, 60_000);
});
