/**
 * Claim-next through the public API (issue 24, capability 1), on the memory store: `addItems`, `removeItems` and
 * `claimNext` give a lease handle that every fenced operation accepts; `idle` says when to come back; an
 * abandoned run is taken over with its checkpoint, or (`record-first`) recorded by the next holder's first fenced
 * write under the abandoned run id; bad input and a store without sets are refused before any I/O.
 */
import diagnostics_channel, { type TracingChannelSubscribers } from 'node:diagnostics_channel';
import { describe, expect, it } from 'vitest';
import { createManualClock } from '../../src/clock.js';
import { createMemoryStore } from '../../src/adapters/memory/index.js';
import { describeRefusal } from '../../src/describe.js';
import { InvalidArgumentError, isLeaseError, UnsupportedOperationError } from '../../src/errors.js';
import type { OperationEvent } from '../../src/events.js';
import { createLeases } from '../../src/leases.js';
import type { Store } from '../../src/store.js';
import { MEMORY_EPOCH } from '../adapters/memory-harness.js';
import { spyOn } from './spy-store.js';

const SET = 'scan';
const MINUTE = 60_000;

function setup() {
  const clock = createManualClock(MEMORY_EPOCH);
  const store = createMemoryStore({ clock });
  const a = createLeases(store, { holder: 'a', ttlMs: 5 * MINUTE });
  const b = createLeases(store, { holder: 'b', ttlMs: 5 * MINUTE });
  return { clock, store, a, b };
}

/** The grant of `claimNext`, or the test fails with the refusal described. */
async function granted(leases: ReturnType<typeof setup>['a'], options?: Parameters<ReturnType<typeof setup>['a']['claimNext']>[1]) {
  const result = await leases.claimNext(SET, options);
  if (!result.ok) throw new Error(describeRefusal(result));
  return result;
}

describe('claimNext through the lease API', () => {
  it('grants the item available longest, with a lease handle every fenced operation accepts', async () => {
    const { clock, a, b } = setup();
    expect(await a.addItems(SET, ['item:2', 'item:1'])).toMatchObject({ ok: true, added: ['item:2', 'item:1'] });
    clock.advance(1_000);
    await a.addItems(SET, ['item:0']);
    const first = await granted(a, { runId: 'r1' });
    expect(first).toMatchObject({ ok: true, set: SET, previous: null, checkpoint: null, abandoned: null, recoveryRequired: false });
    // NOTE: item:1 and item:2 were due at the same time: ties go by key in code-unit order.
    expect(first.lease.key).toBe('item:1');
    expect(first.lease).toMatchObject({ holder: 'a', runId: 'r1', ttlMs: 5 * MINUTE, expiresAt: MEMORY_EPOCH + 1_000 + 5 * MINUTE });
    expect(first.lease.timeLeftMs()).toBeGreaterThan(0);
    expect((await granted(b)).lease.key).toBe('item:2');
    expect((await granted(b)).lease.key).toBe('item:0');
    expect(await a.fencedWrite(first.lease, () => 'written', { checkpoint: { step: 1 } })).toMatchObject({ ok: true, value: 'written' });
    expect(await a.renew(first.lease)).toMatchObject({ ok: true });
    expect(await a.release(first.lease)).toMatchObject({ ok: true });
    const again = await granted(b);
    expect(again.lease.key).toBe('item:1');
    expect(again.previous).toMatchObject({ kind: 'released', holder: 'a' });
    expect(again.checkpoint).toMatchObject({ value: { step: 1 } });
  });

  it('idle says when an item may be claimable, in one line', async () => {
    const { clock, a, b } = setup();
    const empty = await a.claimNext(SET);
    expect(empty).toMatchObject({ ok: false, reason: 'idle', set: SET, nextAt: null });
    await a.addItems(SET, ['item:1'], { notBeforeMs: 30_000 });
    const notDue = await a.claimNext(SET);
    expect(notDue).toMatchObject({ ok: false, reason: 'idle', nextAt: MEMORY_EPOCH + 30_000 });
    if (notDue.ok) return;
    expect(describeRefusal(notDue)).toBe(
      `claim-next idle on set scan (idle: no item claimable now; the next may be claimable at ${new Date(MEMORY_EPOCH + 30_000).toISOString()}) (store now ${new Date(MEMORY_EPOCH).toISOString()})`,
    );
    if (empty.ok) return;
    expect(describeRefusal(empty)).toContain('none will become claimable by time alone');
    clock.advance(30_000);
    const lease = (await granted(a)).lease;
    expect(await b.claimNext(SET)).toMatchObject({ ok: false, reason: 'idle', nextAt: lease.expiresAt });
    await a.release(lease, { holdMs: 6 * MINUTE });
    expect(await b.claimNext(SET)).toMatchObject({ ok: false, reason: 'idle', nextAt: MEMORY_EPOCH + 30_000 + 6 * MINUTE });
  });

  it('take-over: an expired run is granted at once with its checkpoint, and `abandoned` names the run', async () => {
    const { clock, a, b } = setup();
    await a.addItems(SET, ['item:1']);
    const first = await granted(a, { runId: 'r7' });
    await a.checkpoint(first.lease, { cursor: 40 });
    clock.advance(5 * MINUTE);
    const next = await granted(b, { runId: 'r8' });
    expect(next).toMatchObject({
      abandoned: { token: first.lease.token, holder: 'a', runId: 'r7', expiredAt: first.lease.expiresAt },
      previous: { kind: 'expired', runId: 'r7' },
      checkpoint: { value: { cursor: 40 }, token: first.lease.token },
      recoveryRequired: false,
    });
    expect(next.lease.inherited).toMatchObject({ value: { cursor: 40 } });
    expect(await a.fencedWrite(first.lease, () => 'stale')).toMatchObject({ ok: false, reason: 'superseded' });
  });

  it('record-first: the first fenced write records the abandoned run under its run id, resolving the recovery', async () => {
    const { clock, a, b } = setup();
    await a.addItems(SET, ['item:1']);
    const first = await granted(a, { runId: 'r7' });
    clock.advance(5 * MINUTE);
    const next = await granted(b, { runId: 'r8', onExpired: 'record-first' });
    expect(next).toMatchObject({ recoveryRequired: true, abandoned: { runId: 'r7', holder: 'a' } });
    expect(await b.inspect('item:1')).toMatchObject({ recoveryRequired: true });
    const recorded = await b.fencedWrite(next.lease, () => 'abandoned recorded', {
      submission: { runId: 'r7', payload: { outcome: 'abandoned', by: 'b' } },
      checkpoint: { attempts: 1 },
    });
    expect(recorded).toMatchObject({ ok: true, submission: { runId: 'r7', token: next.lease.token } });
    expect(await b.inspect('item:1')).toMatchObject({ recoveryRequired: false, checkpoint: { value: { attempts: 1 } } });
    // NOTE: the abandoned worker's late submit under its own run id now learns that its run was recorded otherwise.
    const late = await a.fencedWrite(first.lease, () => 'late', { submission: { payload: { outcome: 'done' } } });
    expect(late).toMatchObject({ ok: false, reason: 'replay-conflict' });
    // NOTE: the holder schedules a retry; the item comes back after the hold.
    await b.release(next.lease, { holdMs: 6 * 60 * MINUTE });
    expect(await a.claimNext(SET)).toMatchObject({ ok: false, reason: 'idle', nextAt: MEMORY_EPOCH + 5 * MINUTE + 6 * 60 * MINUTE });
  });

  it('record-first: a holder that dies before recording leaves the key blocked, not handed on unrecorded', async () => {
    const { clock, a, b } = setup();
    await a.addItems(SET, ['item:1']);
    await granted(a, { runId: 'r7' });
    clock.advance(5 * MINUTE);
    await granted(b, { runId: 'r8', onExpired: 'record-first' });
    clock.advance(5 * MINUTE);
    expect(await a.claimNext(SET)).toMatchObject({ ok: false, reason: 'idle', nextAt: null });
    expect(await a.claim('item:1')).toMatchObject({ ok: false, reason: 'recovery-required' });
  });

  it('expect skips items whose state differs and binds the grant to the state it was claimed under', async () => {
    const { a, b } = setup();
    await a.addItems(SET, ['item:1', 'item:2']);
    await b.setKeyState('item:1', { model: 'v1' });
    await b.setKeyState('item:2', { model: 'v2' });
    const next = await granted(a, { expect: { model: 'v2' } });
    expect(next.lease.key).toBe('item:2');
    expect(await a.claimNext(SET, { expect: { model: 'v2' } })).toMatchObject({ ok: false, reason: 'idle', nextAt: next.lease.expiresAt });
    await b.setKeyState('item:2', { model: 'v3' });
    expect(await a.fencedWrite(next.lease, () => 1)).toMatchObject({
      ok: false,
      reason: 'state-changed',
      attribute: { name: 'model', expected: 'v2', found: 'v3' },
    });
  });

  it('addItems refuses a key of another set as a value; removeItems takes items out', async () => {
    const { a } = setup();
    await a.addItems('other', ['item:1']);
    const refused = await a.addItems(SET, ['item:2', 'item:1']);
    expect(refused).toMatchObject({ ok: false, reason: 'in-another-set', key: 'item:1', otherSet: 'other' });
    if (refused.ok) return;
    expect(describeRefusal(refused)).toBe('addItems refused on set scan (in-another-set: item:1 is an item of set other): nothing added');
    expect(await a.claimNext(SET)).toMatchObject({ ok: false, reason: 'idle', nextAt: null });
    expect(await a.removeItems('other', ['item:1', 'item:9'])).toMatchObject({ ok: true, removed: ['item:1'] });
    expect(await a.claimNext('other')).toMatchObject({ ok: false, reason: 'idle', nextAt: null });
  });

  it('bad input is refused with INVALID_ARGUMENT before any store call', async () => {
    const { store } = setup();
    const spied = spyOn(store);
    const leases = createLeases(spied.store, { holder: 'a' });
    const bad: Array<() => Promise<unknown>> = [
      () => leases.addItems('', ['k']),
      () => leases.addItems(SET, []),
      () => leases.addItems(SET, ['k', 'k']),
      () => leases.addItems(SET, ['k', 7 as never]),
      () =>
        leases.addItems(
          SET,
          Array.from({ length: 1001 }, (_, i) => `k${i}`),
        ),
      () => leases.addItems(SET, 'k' as never),
      () => leases.addItems(SET, ['k'], { notBeforeMs: -1 }),
      () => leases.addItems(SET, ['k'], { notBeforeMs: 1.5 }),
      () => leases.addItems(SET, ['k'], { notBeforeMs: Number.MAX_SAFE_INTEGER }),
      () => leases.removeItems(SET, []),
      () => leases.removeItems(undefined as never, ['k']),
      () => leases.claimNext(''),
      () => leases.claimNext(SET, { onExpired: 'drop' as never }),
      () => leases.claimNext(SET, { ttlMs: -5 }),
      () => leases.claimNext(SET, { runId: '' }),
      () => leases.claimNext(SET, { expect: { tier: 3 as never } }),
      () => leases.claimNext(SET, { recovering: true } as never),
      () => leases.claimNext(SET, { wait: { timeoutMs: -1 } }),
      () => leases.claimNext(SET, { wait: null as never }),
      () => leases.claimNext(SET, { wait: { timeoutMs: 10, signal: {} as never } }),
    ];
    for (const call of bad) await expect(call()).rejects.toBeInstanceOf(InvalidArgumentError);
    expect(spied.calls).toEqual([]);
  });

  it('a store without sets is refused with UNSUPPORTED_OPERATION before any I/O', async () => {
    const { store } = setup();
    const { addItems: _a, removeItems: _r, claimNext: _c, ...rest } = store;
    const withoutSets = spyOn({ ...rest, id: store.id } as Store);
    const leases = createLeases(withoutSets.store, { holder: 'a' });
    for (const call of [() => leases.claimNext(SET), () => leases.addItems(SET, ['k']), () => leases.removeItems(SET, ['k'])]) {
      const error = await call().catch((thrown: unknown) => thrown);
      expect(error).toBeInstanceOf(UnsupportedOperationError);
      expect(isLeaseError(error, 'UNSUPPORTED_OPERATION')).toBe(true);
      expect((error as Error).message).toContain('the store offers no sets');
    }
    expect(withoutSets.calls).toEqual([]);
  });

  it("a store whose item methods cannot be read gets INVALID_ARGUMENT, not the getter's error", async () => {
    const { store } = setup();
    let armed = false;
    const hostile = new Proxy(store, {
      get(target, property, receiver) {
        if (armed && property === 'claimNext') throw new Error('getter claimNext');
        return Reflect.get(target, property, receiver) as unknown;
      },
    });
    const leases = createLeases(hostile, { holder: 'a' });
    armed = true;
    await expect(leases.claimNext(SET)).rejects.toBeInstanceOf(InvalidArgumentError);
  });

  it('UnsupportedOperationError is log-safe JSON with its code, operation and store', () => {
    const error = new UnsupportedOperationError('claimNext', 'pg:leases', 'the store offers no sets (addItems, removeItems and claimNext)');
    expect(error.message).toBe(
      'claimNext is not supported by store pg:leases: the store offers no sets (addItems, removeItems and claimNext)',
    );
    expect(JSON.parse(JSON.stringify(error))).toMatchObject({
      name: 'UnsupportedOperationError',
      code: 'UNSUPPORTED_OPERATION',
      operation: 'claimNext',
      storeId: 'pg:leases',
    });
  });

  it('publishes claimNext events: the set as key, the item granted, idle with nextAt, no secret', async () => {
    const { a } = setup();
    const seen: OperationEvent[] = [];
    const handler = { asyncEnd: (event: OperationEvent) => void seen.push(event) } as unknown as TracingChannelSubscribers<OperationEvent>;
    const channel = diagnostics_channel.tracingChannel<OperationEvent, OperationEvent>('leasefence:claimNext');
    channel.subscribe(handler);
    try {
      await a.addItems(SET, ['item:1']);
      const next = await granted(a, { runId: 'r1' });
      await a.claimNext(SET);
      expect(seen.map((event) => event.outcome)).toMatchObject([
        { ok: true, result: 'granted', item: 'item:1', token: next.lease.token },
        { ok: false, result: 'idle', reason: 'idle', nextAt: next.lease.expiresAt },
      ]);
      expect(seen[0]).toMatchObject({ operation: 'claimNext', key: SET, holder: 'a', runId: 'r1' });
      expect(JSON.stringify(seen, (_, v: unknown) => (typeof v === 'bigint' ? String(v) : v))).not.toContain(next.lease.fence().secret);
    } finally {
      channel.unsubscribe(handler);
    }
  });

  it('results are log-safe: JSON.stringify works and carries no secret', async () => {
    const { a } = setup();
    await a.addItems(SET, ['item:1']);
    const next = await granted(a);
    const json = JSON.stringify(next);
    expect(json).toContain('"token":"');
    expect(json).not.toContain(next.lease.fence().secret);
  });

  describe('with wait', () => {
    /** A memory store on the real clock: the waits are real, and short. */
    function realTime() {
      const store = createMemoryStore();
      return {
        store,
        a: createLeases(store, { holder: 'a', ttlMs: 5 * MINUTE }),
        b: createLeases(store, { holder: 'b', ttlMs: 5 * MINUTE }),
      };
    }

    it('sleeps until nextAt, the expiry of the live grant, and takes the item over', async () => {
      const { a, b } = realTime();
      await a.addItems(SET, ['item:1']);
      const held = await a.claimNext(SET, { runId: 'r1', ttlMs: 80 });
      if (!held.ok) throw new Error('not granted');
      const started = performance.now();
      const next = await b.claimNext(SET, { runId: 'r2', wait: { timeoutMs: 5_000, pollMs: 5_000, jitterMs: 0 } });
      expect(next).toMatchObject({ ok: true, abandoned: { runId: 'r1' } });
      // NOTE: woken at nextAt (80 ms), not at pollMs (5 s).
      expect(performance.now() - started).toBeLessThan(2_000);
    });

    it('notices an added item within pollMs (sets publish no notifications)', async () => {
      const { a, b } = realTime();
      setTimeout(() => void a.addItems(SET, ['item:late']), 60);
      const next = await b.claimNext(SET, { wait: { timeoutMs: 5_000, pollMs: 20 } });
      expect(next.ok && next.lease.key).toBe('item:late');
    });

    it('ends with the last idle at its timeout, saying how long it waited', async () => {
      const { b } = realTime();
      const started = performance.now();
      const idle = await b.claimNext(SET, { wait: { timeoutMs: 120, pollMs: 30 } });
      expect(idle).toMatchObject({ ok: false, reason: 'idle', nextAt: null, waitEnded: 'timeout' });
      if (idle.ok) return;
      expect(idle.waitedMs).toBeGreaterThanOrEqual(100);
      expect(performance.now() - started).toBeGreaterThanOrEqual(100);
      expect(JSON.parse(JSON.stringify(idle))).toMatchObject({ reason: 'idle', waitEnded: 'timeout' });
    });

    it('a signal ends the wait with aborted; an aborted signal rejects before any store call', async () => {
      const { store } = realTime();
      const spied = spyOn(store);
      const leases = createLeases(spied.store, { holder: 'a' });
      const controller = new AbortController();
      setTimeout(() => controller.abort(new Error('shutdown')), 40);
      const idle = await leases.claimNext(SET, { wait: { timeoutMs: 5_000, pollMs: 10, signal: controller.signal } });
      expect(idle).toMatchObject({ ok: false, reason: 'idle', waitEnded: 'aborted' });
      const calls = spied.calls.length;
      expect(calls).toBeGreaterThan(0);
      await expect(leases.claimNext(SET, { wait: { timeoutMs: 5_000, signal: controller.signal } })).rejects.toThrow('shutdown');
      expect(spied.calls.length).toBe(calls);
    });
  });
});
