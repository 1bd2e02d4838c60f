/**
 * The lease handle: `restore()` round-trips `export()`, `await using` releases, and the token gate lets
 * only the newest grant of a key write a resource.
 */
import { describe, expect, it } from 'vitest';
import { createManualClock } from '../../src/clock.js';
import { createMemoryStore, createMemoryTokenGate } from '../../src/adapters/memory/index.js';
import { createLeases } from '../../src/leases.js';
import { Lease } from '../../src/lease.js';
import type { GateOutcome } from '../../src/fence/operations.js';
import type { Fence } from '../../src/fence/types.js';
import type { TokenGate } from '../../src/gate.js';
import { MEMORY_EPOCH } from '../adapters/memory-harness.js';

const KEY = 'job:42';

function setup() {
  const clock = createManualClock(MEMORY_EPOCH);
  const store = createMemoryStore({ clock });
  return { clock, store, a: createLeases(store, { holder: 'a', ttlMs: 1_000 }), b: createLeases(store, { holder: 'b', ttlMs: 1_000 }) };
}

describe('restore', () => {
  it('round-trips export() (through JSON text, in another Leases instance): the same grant, able to write and release', async () => {
    const { store, a } = setup();
    const lease = await a.claimOrThrow(KEY, { runId: 'r1', attributes: { model: 'v1' } });
    const json = JSON.parse(JSON.stringify(lease.export())) as ReturnType<Lease['export']>;
    expect(json).toEqual(lease.export());
    const elsewhere = createLeases(store, { holder: 'another-process' });
    const restored = elsewhere.restore(json);
    expect(restored).toBeInstanceOf(Lease);
    expect(restored.export()).toEqual(lease.export());
    expect(restored.fence()).toEqual(lease.fence());
    expect(await elsewhere.fencedWrite(restored, () => 'from elsewhere', { attributes: { model: 'v1' } })).toMatchObject({
      ok: true,
      value: 'from elsewhere',
      token: lease.token,
    });
    expect(await elsewhere.release(restored)).toMatchObject({ ok: true, alreadyReleased: false });
    expect(await a.release(lease)).toMatchObject({ ok: true, alreadyReleased: true });
  });

  it('a restored handle knows no local deadline until it renews (its expiry is unknown to this process)', async () => {
    const { a } = setup();
    const lease = await a.claimOrThrow(KEY);
    const restored = a.restore(lease.export());
    expect(restored.localDeadline).toBe(Number.NEGATIVE_INFINITY);
    await a.renewOrThrow(restored);
    expect(Number.isFinite(restored.localDeadline)).toBe(true);
    const forever = await a.claimOrThrow('job:forever', { ttlMs: null });
    expect(a.restore(forever.export()).localDeadline).toBe(Number.POSITIVE_INFINITY);
  });

  it('a restored token of 2^63 - 1 (the largest a store keeps) keeps full precision', async () => {
    const { a } = setup();
    const lease = await a.claimOrThrow(KEY);
    const big = a.restore({ ...lease.export(), token: '9223372036854775807' });
    expect(big.token).toBe(9223372036854775807n);
    expect(await a.fencedWrite(big, () => 1)).toMatchObject({ ok: false, reason: 'not-held', expected: { token: 9223372036854775807n } });
  });
});

describe('await using', () => {
  it('releases the lease when the block ends', async () => {
    const { a, b } = setup();
    let token = 0n;
    {
      await using lease = await a.claimOrThrow(KEY);
      token = lease.token;
      expect(await b.claim(KEY)).toMatchObject({ ok: false, reason: 'held' });
    }
    expect(await a.inspect(KEY)).toMatchObject({ grant: null, ending: { kind: 'released', token } });
  });

  it('releases the lease when the block throws', async () => {
    const { a } = setup();
    const run = async () => {
      await using _lease = await a.claimOrThrow(KEY);
      throw new Error('work failed');
    };
    await expect(run()).rejects.toThrow('work failed');
    expect((await a.inspect(KEY)).ending).toMatchObject({ kind: 'released' });
  });
});

describe('token gate (gateWrite)', () => {
  it('refuses an older token, passes an equal one, records the newest', async () => {
    const { a, b, clock } = setup();
    const gate = createMemoryTokenGate();
    const old = await a.claimOrThrow(KEY);
    expect(await a.gateWrite(gate, 'report.csv', old, () => 'v1')).toEqual({ ok: true, value: 'v1', token: old.token });
    expect(await a.gateWrite(gate, 'report.csv', old, () => 'v1 again')).toEqual({ ok: true, value: 'v1 again', token: old.token });
    clock.advance(1_000);
    const current = await b.claimOrThrow(KEY);
    expect(await b.gateWrite(gate, 'report.csv', current, () => 'v2')).toMatchObject({ ok: true, token: current.token });
    let staleRan = false;
    const stale = await a.gateWrite(gate, 'report.csv', old, () => {
      staleRan = true;
    });
    expect(stale).toEqual({
      ok: false,
      reason: 'stale-token',
      resource: 'report.csv',
      expected: { key: KEY, token: old.token },
      found: { key: KEY, token: current.token },
    });
    expect(staleRan).toBe(false);
    expect(await a.gateWrite(gate, 'other.csv', old, () => 'fresh resource')).toMatchObject({ ok: true });
  });

  it('refuses a token of another lease key: tokens only order grants of the same key', async () => {
    const { a } = setup();
    const gate = createMemoryTokenGate();
    const first = await a.claimOrThrow('job:1');
    const second = await a.claimOrThrow('job:2');
    await a.gateWrite(gate, 'shared.csv', first, () => undefined);
    expect(await a.gateWrite(gate, 'shared.csv', second, () => undefined)).toEqual({
      ok: false,
      reason: 'key-mismatch',
      resource: 'shared.csv',
      expected: { key: 'job:2', token: second.token },
      found: { key: 'job:1', token: first.token },
    });
  });
});

describe('the handle stays immutable to its users (its fence is shared with the store, not frozen per handle)', () => {
  it('fence() hands out frozen copies: changing one, or a gate changing its fence, never changes what the handle presents', async () => {
    const { store, a } = setup();
    const claimed = await a.claim(KEY);
    if (!claimed.ok) throw new Error('expected a grant');
    const { lease } = claimed;
    const copy = lease.fence();
    expect(Object.isFrozen(copy)).toBe(true);
    expect(() => {
      (copy as { token: bigint }).token = 999n;
    }).toThrow(TypeError);
    expect(lease.fence()).not.toBe(copy);
    const hostileGate = {
      async write<T>(_resource: string, fence: Fence, write: (context: null) => T | Promise<T>): Promise<GateOutcome<T>> {
        expect(Object.isFrozen(fence)).toBe(true);
        expect(() => {
          (fence as { secret: string }).secret = 'f'.repeat(32);
        }).toThrow(TypeError);
        return { ok: true, value: await write(null), token: fence.token };
      },
    } as unknown as TokenGate<null>;
    expect(await a.gateWrite(hostileGate, 'report', lease, () => 'written')).toMatchObject({ ok: true, value: 'written' });
    expect(lease.fence()).toEqual({ key: KEY, token: lease.token, secret: store.record(KEY)?.grant?.secret, holder: 'a', runId: null });
    expect(await a.renew(lease)).toMatchObject({ ok: true });
    expect(await a.release(lease)).toMatchObject({ ok: true, alreadyReleased: false });
  });

  it('assigning its public fields is refused as tampering before any I/O, and the grant is untouched', async () => {
    const { store, a } = setup();
    const claimed = await a.claim(KEY);
    if (!claimed.ok) throw new Error('expected a grant');
    const { lease } = claimed;
    const before = store.record(KEY);
    (lease as { token: bigint }).token = lease.token + 1n;
    await expect(a.release(lease)).rejects.toMatchObject({ code: 'INVALID_ARGUMENT' });
    expect(store.record(KEY)).toBe(before);
  });
});
