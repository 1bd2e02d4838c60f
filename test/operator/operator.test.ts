/** The operators' entry point: no holder id, revokes recorded with its `by`, and token gate inspect / reset delegated. */
import { describe, expect, it } from 'vitest';
import { createMemoryStore } from '../../src/adapters/memory/index.js';
import { createLeases } from '../../src/leases.js';
import { createOperator, type OperatorGate } from '../../src/operator.js';
import type { GateRecord } from '../../src/fence/operations.js';
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

  it('delegates gate inspect and reset, validating the resource first; refuses without a gate', async () => {
    const calls: string[] = [];
    const answer = (resource: string): Promise<GateRecord> => Promise.resolve({ resource, found: { key: 'job:1', token: 7n } });
    const gate: OperatorGate = {
      inspect: (resource) => {
        calls.push(`inspect ${resource}`);
        return answer(resource);
      },
      reset: (resource) => {
        calls.push(`reset ${resource}`);
        return answer(resource);
      },
    };
    const operator = createOperator(createMemoryStore(), { gate });
    expect(await operator.gateInspect('report.csv')).toEqual({ resource: 'report.csv', found: { key: 'job:1', token: 7n } });
    await operator.gateReset('report.csv');
    await expect(operator.gateReset('')).rejects.toMatchObject({ code: 'INVALID_ARGUMENT' });
    expect(calls).toEqual(['inspect report.csv', 'reset report.csv']);
    await expect(createOperator(createMemoryStore()).gateInspect('x')).rejects.toMatchObject({ code: 'INVALID_ARGUMENT' });
  });

  it('refuses to list on a store without `list`, before any I/O', async () => {
    const { list: _list, ...withoutList } = createMemoryStore();
    await expect(createOperator(withoutList as Store).list()).rejects.toMatchObject({ code: 'INVALID_ARGUMENT' });
  });
});
