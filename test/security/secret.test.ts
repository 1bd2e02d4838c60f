/**
 * Issue 9 findings 2 and 3, issue 8 item 9: a lease secret is a credential. It is no property of the
 * handle, never in `JSON.stringify`, `util.inspect`, a spread copy, an error's message or cause chain;
 * every result and error serialises to JSON (tokens as decimal strings); hand-off is an explicit export.
 */
import { inspect } from 'node:util';
import { describe, expect, it } from 'vitest';
import { createMemoryTokenGate } from '../../src/adapters/memory/index.js';
import {
  GateRefusedError,
  InvalidArgumentError,
  isLeaseError,
  LeaseBusyError,
  LeaseUnconfirmedError,
  OutcomeUnknownError,
  RecoveryRequiredError,
  StoreUnavailableError,
} from '../../src/errors.js';
import type { Lease } from '../../src/lease.js';
import { everyLogText, securitySetup, thrownBy } from './setup.js';

const KEY = 'job:42';

/** A driver error like ioredis's ReplyError: the failed command's arguments (the secret among them) on it. */
function driverErrorQuoting(secret: string): Error {
  const error = new Error(`OOM command not allowed when used memory > 'maxmemory'. script: EVALSHA abc 1 k ${secret}`);
  Object.assign(error, { command: { name: 'evalsha', args: ['abc', '1', KEY, secret] }, code: 'OOM' });
  return error;
}

describe('the lease handle keeps its secret to itself', () => {
  it('no own or enumerable property, JSON, util.inspect or spread copy of a handle or claim result shows the secret', async () => {
    const { a } = securitySetup();
    const claimed = await a.claim(KEY, { runId: 'r1', attributes: { model: 'v1' } });
    if (!claimed.ok) throw new Error('claim refused');
    const { lease } = claimed;
    const { secret } = lease.export();
    expect(secret).toMatch(/^[0-9a-f]{32}$/);
    expect(Object.keys(lease)).not.toContain('secret');
    expect(Object.getOwnPropertyNames(lease)).not.toContain('secret');
    expect(everyLogText(lease)).not.toContain(secret);
    expect(everyLogText(claimed)).not.toContain(secret);
    expect(inspect(lease)).toContain("secret: '[redacted]'");
    expect(inspect(lease)).toMatch(/^Lease \{/);
    expect(JSON.parse(JSON.stringify(claimed))).toMatchObject({
      ok: true,
      lease: { key: KEY, token: String(lease.token), holder: 'a', runId: 'r1' },
    });
  });

  it('export() is the hand-off: it carries the secret, and restore() of it acts as the holder', async () => {
    const { a, b } = securitySetup();
    const lease = await a.claimOrThrow(KEY);
    const exported = JSON.parse(JSON.stringify(lease.export())) as ReturnType<Lease['export']>;
    const restored = b.restore(exported);
    expect(await b.fencedWrite(restored, () => 'written elsewhere')).toMatchObject({ ok: true, value: 'written elsewhere' });
  });

  it('restore() of a JSON without the secret (JSON.stringify(lease)) is refused, pointing to export()', async () => {
    const { a } = securitySetup();
    const lease = await a.claimOrThrow(KEY);
    const error = await thrownBy(() => a.restore(JSON.parse(JSON.stringify(lease)) as never));
    expect(error).toBeInstanceOf(InvalidArgumentError);
    expect((error as Error).message).toContain('lease.export()');
  });
});

describe('results are log-safe JSON (tokens as decimal strings, no secret)', () => {
  it('claim results (granted, held, recovery-required), refusals, inspect and every outcome serialise', async () => {
    const { a, b, clock } = securitySetup();
    const lease = await a.claimOrThrow(KEY, { attributes: { model: 'v1' } });
    const { secret } = lease.export();
    await a.checkpoint(lease, { step: 1 });
    const values: unknown[] = [
      await b.claim(KEY),
      await a.inspect(KEY),
      await a.renew(lease),
      await a.checkpoint(lease, { step: 2 }),
      await a.fencedWrite(lease, () => 10n, { checkpoint: { step: 3 } }),
      await a.fencedWrite(lease, () => 1, { attributes: { model: 'v2' } }),
    ];
    await a.revoke(KEY, { reason: 'stuck', requireRecovery: true });
    values.push(await b.claim(KEY), await a.release(lease), await a.fencedWrite(lease, () => 1));
    clock.advance(5_000);
    const recovering = await b.claimOrThrow(KEY, { recovering: true });
    values.push(
      await b.recover(recovering, 'resume'),
      await b.revoke(KEY, { reason: 'again' }),
      await b.revoke('never-claimed', { reason: 'x' }),
    );
    for (const value of values) {
      const json = JSON.stringify(value);
      expect(json).not.toContain(secret);
      expect(json).not.toContain(recovering.export().secret);
    }
    expect(JSON.parse(JSON.stringify(values[0]))).toMatchObject({ ok: false, reason: 'held', token: String(lease.token) });
    expect(JSON.parse(JSON.stringify(values[1]))).toMatchObject({
      token: String(lease.token),
      checkpoint: { value: { step: 1 }, token: String(lease.token) },
    });
    expect(JSON.parse(JSON.stringify(values[4]))).toMatchObject({ ok: true, value: '10' });
    expect(JSON.parse(JSON.stringify(values[6]))).toMatchObject({
      ok: false,
      reason: 'recovery-required',
      checkpoint: { token: String(lease.token) },
    });
    expect(JSON.parse(JSON.stringify(values[8]))).toMatchObject({ ok: false, reason: 'revoked', expected: { token: String(lease.token) } });
  });

  it('results keep their shape: own properties compare equal to plain objects', async () => {
    const { a } = securitySetup();
    const lease = await a.claimOrThrow(KEY);
    expect(await a.renew(lease)).toEqual({
      ok: true,
      key: KEY,
      token: lease.token,
      expiresAt: lease.expiresAt,
      now: expect.any(Number) as number,
    });
  });
});

describe('errors are log-safe (finding 2)', () => {
  it('a driver error quoting the secret never reaches a leasefence error as it is: message, cause chain, inspect, JSON', async () => {
    const { a } = securitySetup();
    const lease = await a.claimOrThrow(KEY);
    const { secret } = lease.export();
    const errors = [
      new LeaseUnconfirmedError(KEY, lease.token, { cause: driverErrorQuoting(secret) }),
      new StoreUnavailableError(`redis refused: ${secret}`, { cause: driverErrorQuoting(secret) }),
      new OutcomeUnknownError('reply lost', { cause: new Error('wrapper', { cause: driverErrorQuoting(secret) }) }),
      new LeaseUnconfirmedError(KEY, lease.token, { cause: new StoreUnavailableError('down', { cause: driverErrorQuoting(secret) }) }),
    ];
    for (const error of errors) {
      expect(everyLogText(error)).not.toContain(secret);
      expect(JSON.stringify(error)).toContain('[redacted]');
    }
    expect(errors[0]?.cause).not.toHaveProperty('command');
    expect(errors[0]?.cause).toMatchObject({ code: 'OOM' });
    expect(errors[3]?.cause).toBeInstanceOf(StoreUnavailableError);
  });

  it('every error has toJSON: name, code, message and its detail with tokens as decimal strings', async () => {
    const { a, b } = securitySetup();
    const lease = await a.claimOrThrow(KEY);
    const busy = await thrownBy(() => b.claimOrThrow(KEY));
    expect(busy).toBeInstanceOf(LeaseBusyError);
    expect(JSON.parse(JSON.stringify(busy))).toMatchObject({
      name: 'LeaseBusyError',
      code: 'LEASE_BUSY',
      message: expect.stringContaining(KEY) as string,
      held: { token: String(lease.token), holder: 'a' },
    });
    await a.revoke(KEY, { reason: 'r', requireRecovery: true });
    const lost = await thrownBy(() => a.renewOrThrow(lease));
    expect(JSON.parse(JSON.stringify(lost))).toMatchObject({
      name: 'LeaseLostError',
      code: 'LEASE_LOST',
      refusal: { reason: 'revoked', expected: { token: String(lease.token) } },
    });
    const gate = createMemoryTokenGate();
    const other = await b.claimOrThrow('job:other');
    await b.gateWrite(gate, 'file', other, () => undefined);
    const fresh = await a.claimOrThrow('job:third');
    const refused = await thrownBy(() => a.gateWriteOrThrow(gate, 'file', fresh, () => undefined));
    expect(refused).toBeInstanceOf(GateRefusedError);
    const all = [
      busy,
      lost,
      refused,
      new RecoveryRequiredError({ ok: false, reason: 'recovery-required', key: KEY, token: 3n, now: 1, previous: null, checkpoint: null }),
      new InvalidArgumentError('bad'),
    ];
    for (const error of all) {
      expect(isLeaseError(error)).toBe(true);
      const json = JSON.parse(JSON.stringify(error)) as Record<string, unknown>;
      expect(json).toMatchObject({
        name: (error as Error).name,
        code: (error as { code: string }).code,
        message: (error as Error).message,
      });
      expect(json).not.toHaveProperty('stack');
    }
  });
});
