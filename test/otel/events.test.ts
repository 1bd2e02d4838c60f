/**
 * The diagnostics_channel events: every operation publishes start / end / asyncStart / asyncEnd (or error)
 * with a summary of its outcome, `withLease` publishes a lost lease with its reason, nothing carries a
 * secret, and with no subscriber the operations behave exactly as before.
 */
import diagnostics_channel, { type TracingChannelSubscribers } from 'node:diagnostics_channel';
import { afterEach, describe, expect, it } from 'vitest';
import { createMemoryStore } from '../../src/adapters/memory/index.js';
import { StoreUnavailableError } from '../../src/errors.js';
import { LEASE_LOST_CHANNEL, LEASE_OPERATIONS, operationChannel, type LeaseLostEvent, type OperationEvent } from '../../src/events.js';
import { createLeases } from '../../src/leases.js';
import { createOperator } from '../../src/operator.js';
import type { Store } from '../../src/store.js';

type Phase = 'start' | 'end' | 'asyncStart' | 'asyncEnd' | 'error';

/** Subscribes to every channel; returns what arrived (a snapshot of each context at publish time) and how to stop. */
function record() {
  const events: Array<{ phase: Phase; event: OperationEvent; snapshot: string }> = [];
  const lost: LeaseLostEvent[] = [];
  const snap = (event: unknown) =>
    JSON.stringify(event, (_, value: unknown) =>
      typeof value === 'bigint' ? `${value}n` : value instanceof Error ? { message: value.message, name: value.name } : value,
    );
  const handlers = LEASE_OPERATIONS.map((operation) => {
    const handler = Object.fromEntries(
      (['start', 'end', 'asyncStart', 'asyncEnd', 'error'] as const).map((phase) => [
        phase,
        (event: OperationEvent) => void events.push({ phase, event, snapshot: snap(event) }),
      ]),
    ) as unknown as TracingChannelSubscribers<OperationEvent>;
    operationChannel(operation).subscribe(handler);
    return () => operationChannel(operation).unsubscribe(handler);
  });
  const onLost = (message: unknown) => void lost.push(message as LeaseLostEvent);
  diagnostics_channel.subscribe(LEASE_LOST_CHANNEL, onLost);
  const stop = () => {
    for (const unsubscribe of handlers) unsubscribe();
    diagnostics_channel.unsubscribe(LEASE_LOST_CHANNEL, onLost);
  };
  return { events, lost, stop, snap };
}

let stop: (() => void) | null = null;
afterEach(() => {
  stop?.();
  stop = null;
});

describe('events', () => {
  it('every operation publishes its phases and outcome, and no event holds a secret', async () => {
    const recorded = record();
    stop = recorded.stop;
    const store = createMemoryStore();
    const leases = createLeases(store, { holder: 'w1', ttlMs: 10_000 });
    const other = createLeases(store, { holder: 'w2' });
    const operator = createOperator(store, { by: 'ops' });

    const lease = await leases.claimOrThrow('job:1', { runId: 'r1' });
    await other.claim('job:1');
    await leases.renew(lease);
    await leases.checkpoint(lease, { step: 1 });
    await leases.fencedWrite(lease, () => 'secret-looking value the observer must not see');
    await operator.revoke('job:1', { reason: 'stuck' });
    await leases.fencedWrite(lease, () => 'never');
    await leases.release(lease);
    const next = await other.claimOrThrow('job:1');
    await other.release(next);

    const finished = recorded.events
      .filter((entry) => entry.phase === 'asyncEnd')
      .map(({ event }) => [event.operation, event.key, event.holder, event.outcome]);
    expect(finished).toMatchObject([
      ['claim', 'job:1', 'w1', { ok: true, result: 'granted', token: 1n, previous: null }],
      ['claim', 'job:1', 'w2', { ok: false, result: 'held', holder: 'w1', token: 1n }],
      ['renew', 'job:1', 'w1', { ok: true, result: 'renewed', token: 1n }],
      ['checkpoint', 'job:1', 'w1', { ok: true, result: 'applied', token: 1n }],
      ['fencedWrite', 'job:1', 'w1', { ok: true, result: 'applied', token: 1n }],
      ['revoke', 'job:1', 'ops', { ok: true, result: 'applied', token: 2n }],
      ['fencedWrite', 'job:1', 'w1', { ok: false, result: 'refused', reason: 'revoked' }],
      ['release', 'job:1', 'w1', { ok: false, result: 'refused', reason: 'revoked' }],
      ['claim', 'job:1', 'w2', { ok: true, result: 'granted', token: 3n, previous: { kind: 'revoked', token: 1n } }],
      ['release', 'job:1', 'w2', { ok: true, result: 'applied', token: 3n }],
    ]);
    const renewed = recorded.events.find((entry) => entry.phase === 'asyncEnd' && entry.event.operation === 'renew')?.event.outcome;
    expect(renewed).toMatchObject({ marginMs: expect.any(Number) });
    // Each operation: start, end, asyncStart, asyncEnd on one context object.
    for (const operation of ['renew', 'checkpoint'] as const) {
      const phases = recorded.events.filter((entry) => entry.event.operation === operation).map((entry) => entry.phase);
      expect(phases).toEqual(['start', 'end', 'asyncStart', 'asyncEnd']);
    }
    const everything = recorded.events.map((entry) => entry.snapshot).join('\n');
    for (const secret of [lease.export().secret, next.export().secret]) expect(everything).not.toContain(secret);
    expect(everything).not.toContain('secret-looking value');
    expect(everything).not.toMatch(/"secret"/);
  });

  it('publishes the error phase when an operation throws, and rethrows the same error', async () => {
    const recorded = record();
    stop = recorded.stop;
    const failure = new StoreUnavailableError('down');
    const broken = { ...createMemoryStore(), claim: () => Promise.reject(failure) } as Store;
    const leases = createLeases(broken, { holder: 'w1' });
    await expect(leases.claim('job:2')).rejects.toBe(failure);
    await expect(leases.claim('')).rejects.toMatchObject({ code: 'INVALID_ARGUMENT' });
    const phases = recorded.events.filter((entry) => entry.event.key === 'job:2').map((entry) => entry.phase);
    expect(phases).toEqual(['start', 'end', 'error', 'asyncStart', 'asyncEnd']);
    expect(recorded.events.find((entry) => entry.phase === 'error')?.event.error).toBe(failure);
  });

  it('withLease publishes the loss of its lease with the reason', async () => {
    const recorded = record();
    stop = recorded.stop;
    const store = createMemoryStore();
    const leases = createLeases(store, { holder: 'w1' });
    const operator = createOperator(store);
    const outcome = await leases.withLease(
      'job:3',
      async (lease, signal) => {
        await operator.revoke(lease.key, { reason: 'rebalance' });
        await new Promise((resolve) => signal.addEventListener('abort', resolve, { once: true }));
      },
      { ttlMs: 300, runId: 'r3' },
    );
    expect(!outcome.ok && outcome.reason === 'lost' && outcome.lost.code).toBe('LEASE_LOST');
    expect(recorded.lost).toEqual([
      expect.objectContaining({ key: 'job:3', token: 1n, holder: 'w1', runId: 'r3', code: 'LEASE_LOST', reason: 'revoked' }),
    ]);
    expect(recorded.snap(recorded.lost)).not.toMatch(/secret/i);
  });

  it('with nobody subscribed, operations return and throw exactly as without events', async () => {
    for (const operation of LEASE_OPERATIONS) expect(operationChannel(operation).start.hasSubscribers).toBe(false);
    const leases = createLeases(createMemoryStore(), { holder: 'w1' });
    const lease = await leases.claimOrThrow('job:4');
    await expect(leases.renew(null as never)).rejects.toMatchObject({ code: 'INVALID_ARGUMENT' });
    expect(await leases.release(lease)).toMatchObject({ ok: true, alreadyReleased: false });
  });
});
