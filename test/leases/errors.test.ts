/**
 * The `...OrThrow` variants throw typed errors whose messages name the key and what was expected vs
 * found; the guards recognise errors by brand and code, also from another copy of the package.
 */
import { describe, expect, it } from 'vitest';
import { createManualClock } from '../../src/clock.js';
import { createMemoryStore, createMemoryTokenGate } from '../../src/adapters/memory/index.js';
import {
  GateRefusedError,
  isLeaseError,
  isLeaseLostError,
  isStoreFailure,
  LeaseBusyError,
  LeaseError,
  LeaseLostError,
  LeaseUnconfirmedError,
  OutcomeUnknownError,
  RecoveryRequiredError,
  StoreUnavailableError,
} from '../../src/errors.js';
import { createLeases } from '../../src/leases.js';
import { MEMORY_EPOCH } from '../adapters/memory-harness.js';

const KEY = 'ramp:current';

function setup() {
  const clock = createManualClock(MEMORY_EPOCH);
  const store = createMemoryStore({ clock });
  return { clock, store, a: createLeases(store, { holder: 'a', ttlMs: 1_000 }), b: createLeases(store, { holder: 'b', ttlMs: 1_000 }) };
}

async function thrownBy(act: () => Promise<unknown>): Promise<unknown> {
  try {
    await act();
  } catch (error) {
    return error;
  }
  throw new Error('expected the call to throw');
}

describe('...OrThrow variants', () => {
  it('claimOrThrow on a held key throws LeaseBusyError naming key, holder, run, token and until when', async () => {
    const { a, b } = setup();
    const lease = await a.claimOrThrow(KEY, { runId: 'r1' });
    const error = await thrownBy(() => b.claimOrThrow(KEY));
    expect(error).toBeInstanceOf(LeaseBusyError);
    expect(error).toMatchObject({ code: 'LEASE_BUSY', name: 'LeaseBusyError', held: { reason: 'held', token: lease.token, holder: 'a' } });
    expect((error as Error).message).toBe(
      `lease busy on ${KEY}: held by a run r1 with token ${lease.token} until ${new Date(lease.expiresAt!).toISOString()}`,
    );
    await a.release(lease);
    await a.claimOrThrow(KEY, { ttlMs: null });
    expect(((await thrownBy(() => b.claimOrThrow(KEY))) as Error).message).toContain('until revoked');
  });

  it('claimOrThrow while recovery is required throws RecoveryRequiredError naming the key, who revoked, the checkpoint token', async () => {
    const { a, b } = setup();
    const lease = await a.claimOrThrow(KEY);
    await a.checkpointOrThrow(lease, { cursor: 7 });
    await b.revoke(KEY, { reason: 'abort', by: 'alice', requireRecovery: true });
    const error = await thrownBy(() => b.claimOrThrow(KEY));
    expect(error).toBeInstanceOf(RecoveryRequiredError);
    expect(error).toMatchObject({
      code: 'RECOVERY_REQUIRED',
      refusal: { reason: 'recovery-required', checkpoint: { token: lease.token } },
    });
    expect((error as Error).message).toBe(
      `lease ${KEY} was revoked by alice with a checkpoint (token ${lease.token}) that must be recovered: claim with { recovering: true }`,
    );
  });

  it('renew, checkpoint, fencedWrite and release OrThrow throw LeaseLostError: expected token/holder/run vs found', async () => {
    const { a, b, clock } = setup();
    const old = await a.claimOrThrow(KEY, { runId: 'r1' });
    clock.advance(1_000);
    const current = await b.claimOrThrow(KEY, { runId: 'r2' });
    let wrote = false;
    for (const act of [
      () => a.renewOrThrow(old),
      () => a.checkpointOrThrow(old, { step: 1 }),
      () =>
        a.fencedWriteOrThrow(old, () => {
          wrote = true;
        }),
    ]) {
      const error = await thrownBy(act);
      expect(error).toBeInstanceOf(LeaseLostError);
      expect(error).toMatchObject({ code: 'LEASE_LOST', refusal: { reason: 'superseded', key: KEY } });
      expect((error as Error).message).toBe(
        `lease lost on ${KEY} (superseded: a newer grant took over): expected token ${old.token} (holder a, run r1), found token ${current.token} (holder b, run r2)`,
      );
      expect(isLeaseLostError(error)).toBe(true);
    }
    expect(wrote).toBe(false);
    expect(await b.fencedWriteOrThrow(current, () => 'landed')).toBe('landed');
  });

  it('a LeaseLostError after a revoke says who revoked, when and why', async () => {
    const { a, clock } = setup();
    const lease = await a.claimOrThrow(KEY);
    await a.revoke(KEY, { reason: 'stuck for an hour', by: 'alice' });
    const error = (await thrownBy(() => a.fencedWriteOrThrow(lease, () => 1))) as LeaseLostError;
    expect(error.message).toContain(`(revoked: an operator revoked the grant): expected token ${lease.token}`);
    expect(error.message).toContain(`revoked at ${new Date(clock()).toISOString()} by alice: stuck for an hour`);
  });

  it('an expired lease names when it expired and the store now', async () => {
    const { a, clock } = setup();
    const lease = await a.claimOrThrow(KEY);
    clock.advance(1_500);
    const error = (await thrownBy(() => a.renewOrThrow(lease))) as LeaseLostError;
    expect(error.refusal.reason).toBe('expired');
    expect(error.message).toContain(
      `expired at ${new Date(lease.expiresAt!).toISOString()} (store now ${new Date(clock()).toISOString()})`,
    );
  });

  it('gateWriteOrThrow throws GateRefusedError naming the resource and both tokens', async () => {
    const { a, b, clock } = setup();
    const gate = createMemoryTokenGate();
    const old = await a.claimOrThrow(KEY);
    clock.advance(1_000);
    const current = await b.claimOrThrow(KEY);
    await b.gateWriteOrThrow(gate, 'report.csv', current, () => undefined);
    const error = await thrownBy(() => a.gateWriteOrThrow(gate, 'report.csv', old, () => undefined));
    expect(error).toBeInstanceOf(GateRefusedError);
    expect((error as Error).message).toBe(
      `token gate refused write to report.csv (stale-token): carried ${KEY} token ${old.token}, resource was written by ${KEY} token ${current.token}`,
    );
  });
});

describe('error guards', () => {
  it('recognise every leasefence error by code, and nothing else', () => {
    const lost = new LeaseUnconfirmedError(KEY, 3n, { cause: new StoreUnavailableError('down') });
    expect(isLeaseError(lost)).toBe(true);
    expect(isLeaseError(lost, 'LEASE_UNCONFIRMED')).toBe(true);
    expect(isLeaseError(lost, 'LEASE_LOST')).toBe(false);
    expect(isLeaseLostError(lost)).toBe(true);
    expect(lost.message).toBe(`lease on ${KEY} (token 3) could not be renewed before its safe deadline: down`);
    expect(isStoreFailure(new StoreUnavailableError('down'))).toBe(true);
    expect(isStoreFailure(new OutcomeUnknownError('reply lost'))).toBe(true);
    expect(isStoreFailure(lost)).toBe(false);
    for (const other of [new Error('LEASE_LOST'), { code: 'LEASE_LOST' }, null, undefined, 'LEASE_LOST', 42]) {
      expect(isLeaseError(other)).toBe(false);
      expect(isLeaseLostError(other)).toBe(false);
      expect(isStoreFailure(other)).toBe(false);
    }
  });

  it('recognise an error from another copy of the package (same brand, different class)', () => {
    const foreign = Object.assign(new Error('lease lost'), { code: 'LEASE_LOST' });
    Object.defineProperty(foreign, Symbol.for('leasefence.LeaseError'), { value: true });
    expect(foreign).not.toBeInstanceOf(LeaseError);
    expect(isLeaseError(foreign, 'LEASE_LOST')).toBe(true);
    expect(isLeaseLostError(foreign)).toBe(true);
  });
});
