/** The operators' entry point: no holder id, revokes recorded with its `by`, and token gate inspect / reset delegated. */
import { describe, expect, it } from 'vitest';
import { createMemoryStore } from '../../src/adapters/memory/index.js';
import { createLeases } from '../../src/leases.js';
import { createOperator, type OperatorGate } from '../../src/operator.js';
import type { Store } from '../../src/store.js';

describe('createOperator', () => {
  it('revokes with its own `by` (a call may override it) and inspects without a holder id', async () => {
    const store = createMemoryStore();
    const worker = createLeases(store, { holder: 'w1' });
    await worker.claimOrThrow('a');
    await worker.claimOrThrow('b');
    const operator = createOperator(store, { by: 'ops:alice' });
    expect(await operator.revoke('a', { reason: 'r' })).toMatchObject({ ok: true, revoked: { by: 'ops:alice' } });
    expect(await operator.revoke('b', { reason: 'r', by: 'ops:bob' })).toMatchObject({ ok: true, revoked: { by: 'ops:bob' } });
    expect(await operator.inspect('a')).toMatchObject({ exists: true, grant: null, ending: { kind: 'revoked' } });
    await expect(operator.revoke('a', null as never)).rejects.toMatchObject({ code: 'INVALID_ARGUMENT' });
    expect(() => createOperator(store, { by: '' })).toThrow(expect.objectContaining({ code: 'INVALID_ARGUMENT' }));
  });

  it('delegates gate inspect and reset (with its expectation), validating the resource and the expectation first; refuses without a gate', async () => {
    const calls: string[] = [];
    const found = { key: 'job:1', token: 7n };
    const gate: OperatorGate = {
      inspect: (resource) => {
        calls.push(`inspect ${resource}`);
        return Promise.resolve({ resource, found });
      },
      reset: (resource, options) => {
        calls.push(`reset ${resource} ${options === undefined ? 'any' : `${options.expectedToken} ${options.expectedKey ?? 'any key'}`}`);
        return Promise.resolve({ ok: true, resource, found });
      },
    };
    const operator = createOperator(createMemoryStore(), { gate });
    expect(await operator.gateInspect('report.csv')).toEqual({ resource: 'report.csv', found });
    expect(await operator.gateReset('report.csv')).toEqual({ ok: true, resource: 'report.csv', found });
    await operator.gateReset('report.csv', { expectedToken: 7n });
    await operator.gateReset('report.csv', { expectedToken: 7n, expectedKey: 'job:1' });
    await expect(operator.gateReset('')).rejects.toMatchObject({ code: 'INVALID_ARGUMENT' });
    for (const bad of [
      { expectedToken: 7 },
      { expectedToken: '7' },
      { expectedToken: 0n },
      { expectedToken: 2n ** 63n },
      { expectedKey: 'job:1' },
      { expectedToken: 7n, expectedKey: '' },
      'x',
    ]) {
      await expect(operator.gateReset('report.csv', bad as never)).rejects.toMatchObject({ code: 'INVALID_ARGUMENT' });
    }
    expect(calls).toEqual(['inspect report.csv', 'reset report.csv any', 'reset report.csv 7 any key', 'reset report.csv 7 job:1']);
    calls.length = 0;
    await expect(createOperator(createMemoryStore()).gateInspect('x')).rejects.toMatchObject({ code: 'INVALID_ARGUMENT' });
    // A gate whose reset ignores the expectation (it forgot token 7 while token 6 was expected) is reported, not trusted.
    await expect(operator.gateReset('report.csv', { expectedToken: 6n })).rejects.toThrow(/its reset ignores expectedToken/);
  });

  it('refuses to list on a store without `list`, before any I/O', async () => {
    const { list: _list, ...withoutList } = createMemoryStore();
    await expect(createOperator(withoutList as Store).list()).rejects.toMatchObject({ code: 'INVALID_ARGUMENT' });
  });
});
