/**
 * Issue 9 finding 5 (memory part): `gateWrite` hands the gate the full fence. A memory gate bound to the
 * memory store checks it (token, secret, holder, run, live grant) in the same locked step as the gate check
 * and the write; a forged handle is refused and cannot lock real holders out. Operators can inspect and
 * reset a resource. Without a store the gate is token-only (documented).
 */
import { describe, expect, it } from 'vitest';
import { createMemoryTokenGate } from '../../src/adapters/memory/index.js';
import { GateRefusedError, LeaseLostError } from '../../src/errors.js';
import { securitySetup, thrownBy } from './setup.js';

const KEY = 'job:gate';

describe('a memory gate bound to the memory store checks the full fence', () => {
  it('a restored handle with a forged huge token and a wrong secret is refused, and the real holder still writes', async () => {
    const { a, b, memory } = securitySetup();
    const gate = createMemoryTokenGate({ store: memory });
    const real = await a.claimOrThrow(KEY);
    const forged = b.restore({ ...real.export(), token: (2n ** 62n).toString(), secret: 'f'.repeat(32) });
    let forgedRan = false;
    const outcome = await b.gateWrite(gate, 'report.csv', forged, () => {
      forgedRan = true;
    });
    expect(outcome).toMatchObject({ ok: false, reason: 'not-held', key: KEY, expected: { token: 2n ** 62n } });
    expect(forgedRan).toBe(false);
    const wrongSecret = b.restore({ ...real.export(), secret: 'f'.repeat(32) });
    expect(await b.gateWrite(gate, 'report.csv', wrongSecret, () => 1)).toMatchObject({ ok: false, reason: 'wrong-secret' });
    expect(await gate.inspect('report.csv')).toEqual({ resource: 'report.csv', found: null });
    expect(await a.gateWrite(gate, 'report.csv', real, () => 'real')).toEqual({ ok: true, value: 'real', token: real.token });
    const thrown = await thrownBy(() => b.gateWriteOrThrow(gate, 'report.csv', wrongSecret, () => 1));
    expect(thrown).toBeInstanceOf(LeaseLostError);
    expect((thrown as LeaseLostError).refusal.reason).toBe('wrong-secret');
  });

  it('an expired or revoked grant is refused by the gate even when its token is the highest', async () => {
    const { a, clock, memory } = securitySetup();
    const gate = createMemoryTokenGate({ store: memory });
    const lease = await a.claimOrThrow(KEY);
    expect(await a.gateWrite(gate, 'r', lease, () => 1)).toMatchObject({ ok: true });
    clock.advance(1_000);
    expect(await a.gateWrite(gate, 'r', lease, () => 1)).toMatchObject({ ok: false, reason: 'expired' });
    const next = await a.claimOrThrow(KEY);
    await a.revoke(KEY, { reason: 'operator' });
    expect(await a.gateWrite(gate, 'r', next, () => 1)).toMatchObject({ ok: false, reason: 'revoked' });
  });

  it('gate refusals still come first for a live grant: a stale token and another key', async () => {
    const { a, b, clock, memory } = securitySetup();
    const gate = createMemoryTokenGate({ store: memory });
    const first = await a.claimOrThrow(KEY);
    clock.advance(1_000);
    const second = await b.claimOrThrow(KEY);
    await b.gateWrite(gate, 'r', second, () => 1);
    const other = await a.claimOrThrow('job:other');
    const refused = await thrownBy(() => a.gateWriteOrThrow(gate, 'r', other, () => 1));
    expect(refused).toBeInstanceOf(GateRefusedError);
    expect((refused as GateRefusedError).refusal.reason).toBe('key-mismatch');
    expect(await a.gateWrite(gate, 'r', first, () => 1)).toMatchObject({ ok: false, reason: 'superseded' });
  });
});

describe('operators can inspect and reset a resource', () => {
  it('reset forgets the key and token, so another key can bind the resource; a token-only gate shows the limit', async () => {
    const { a, b } = securitySetup();
    const gate = createMemoryTokenGate();
    const real = await a.claimOrThrow(KEY);
    // NOTE: the documented limit: without a store, a forged token passes and locks real holders out.
    const forged = b.restore({ ...real.export(), token: (2n ** 62n).toString(), secret: 'f'.repeat(32) });
    expect(await b.gateWrite(gate, 'r', forged, () => 1)).toMatchObject({ ok: true });
    expect(await a.gateWrite(gate, 'r', real, () => 1)).toMatchObject({ ok: false, reason: 'stale-token' });
    expect(await gate.inspect('r')).toEqual({ resource: 'r', found: { key: KEY, token: 2n ** 62n } });
    expect(await gate.reset('r')).toEqual({ ok: true, resource: 'r', found: { key: KEY, token: 2n ** 62n } });
    expect(await gate.inspect('r')).toEqual({ resource: 'r', found: null });
    const rekeyed = await a.claimOrThrow('job:new-owner');
    expect(await a.gateWrite(gate, 'r', rekeyed, () => 'rebound')).toMatchObject({ ok: true, value: 'rebound' });
  });
});
