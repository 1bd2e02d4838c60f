/**
 * The new operations on the diagnostics channels and in `leasefence/otel`: `check`, `setKeyState` and
 * `remove` publish their events (no secret, no key-state values), and a fenced write that refused itself, a
 * submission's replay or a check with too little TTL is no fence refusal: the refusal metric does not count it
 * and the held gauge keeps the lease.
 */
import type { DataPoint, Histogram, MetricData } from '@opentelemetry/sdk-metrics';
import { afterEach, describe, expect, it } from 'vitest';
import { createMemoryStore } from '../../src/adapters/memory/index.js';
import { operationChannel, type OperationEvent } from '../../src/events.js';
import { createLeases } from '../../src/leases.js';
import { createOperator } from '../../src/operator.js';
import { METRIC } from '../../src/otel/index.js';
import { disableInstrumentation, instrument } from '../otel/in-memory-otel.js';

afterEach(disableInstrumentation);

const points = (metric: MetricData | undefined): Record<string, unknown> =>
  Object.fromEntries(
    ((metric?.dataPoints ?? []) as DataPoint<number | Histogram>[]).map((point) => [JSON.stringify(point.attributes), point.value]),
  );

describe('events of the record-level operations', () => {
  it('check, setKeyState and remove publish their outcome; nothing secret or from the key state', async () => {
    const events: OperationEvent[] = [];
    const handler = { asyncEnd: (event: OperationEvent) => void events.push(event) };
    for (const operation of ['check', 'setKeyState', 'remove'] as const) operationChannel(operation).subscribe(handler as never);
    try {
      const store = createMemoryStore();
      const leases = createLeases(store, { holder: 'w1', ttlMs: 10_000 });
      const operator = createOperator(store, { by: 'ops:alice' });
      const lease = await leases.claimOrThrow('job:1', { runId: 'r1' });
      await leases.check(lease, { minTtlMs: 60_000 });
      await operator.setKeyState('job:1', { revision: 'secret-ish-value' });
      await operator.remove('job:1');
      const text = JSON.stringify(events, (_, value: unknown) => (typeof value === 'bigint' ? value.toString() : value));
      expect(text).not.toContain(lease.export().secret);
      expect(text).not.toContain('secret-ish-value');
      expect(
        events.map((event) => [event.operation, event.holder, event.outcome?.result, (event.outcome as { reason?: string }).reason]),
      ).toEqual([
        ['check', 'w1', 'refused', 'ttl-insufficient'],
        ['setKeyState', 'ops:alice', 'applied', undefined],
        ['remove', 'operator', 'applied', undefined],
      ]);
      expect(events[1]?.outcome).toMatchObject({ token: lease.token });
    } finally {
      for (const operation of ['check', 'setKeyState', 'remove'] as const) operationChannel(operation).unsubscribe(handler as never);
    }
  });

  it('otel: a write refusal, a replay and too little TTL are no fence refusals, and the lease stays held', async () => {
    const { collect, held, spans } = instrument();
    const leases = createLeases(createMemoryStore(), { holder: 'w1', ttlMs: 10_000 });
    const lease = await leases.claimOrThrow('job:1', { runId: 'r1' });
    await leases.fencedWrite(lease, (context) => context.refuse('owner-inactive'));
    await leases.fencedWrite(lease, () => 1, { submission: { payload: 1 } });
    await leases.fencedWrite(lease, () => 1, { submission: { payload: 1 } });
    await leases.check(lease, { minTtlMs: 60_000 });
    const metrics = await collect();
    expect(points(metrics.get(METRIC.refusals))).toEqual({});
    expect(await held()).toBe(1);
    expect(spans().map((span) => span.name)).toContain('leasefence check');
  });
});
