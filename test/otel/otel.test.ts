/**
 * `leasefence/otel` with the OpenTelemetry SDK's in-memory exporters: the metrics and spans a lease's life
 * produces, with their names, units and attributes, and no secret anywhere.
 */
import type { DataPoint, Histogram, MetricData } from '@opentelemetry/sdk-metrics';
import { afterEach, describe, expect, it } from 'vitest';
import { createManualClock } from '../../src/clock.js';
import { createMemoryStore } from '../../src/adapters/memory/index.js';
import { StoreUnavailableError } from '../../src/errors.js';
import { createLeases } from '../../src/leases.js';
import { createOperator } from '../../src/operator.js';
import { METRIC } from '../../src/otel/index.js';
import type { Store } from '../../src/store.js';
import { disableInstrumentation, instrument } from './in-memory-otel.js';

afterEach(disableInstrumentation);

/** The data points of a metric as `attributes JSON -> value` (a histogram's value: its count and sum). */
function points(metric: MetricData | undefined): Record<string, unknown> {
  const entries = (metric?.dataPoints ?? []) as DataPoint<number | Histogram>[];
  return Object.fromEntries(
    entries.map((point) => [
      JSON.stringify(point.attributes),
      typeof point.value === 'number' ? point.value : { count: point.value.count, sum: point.value.sum },
    ]),
  );
}

describe('leasefence/otel', () => {
  it('records claims, refusals, takeover latency, renew margin, fenced writes, leases held and lost, with spans', async () => {
    const { collect, spans } = instrument();
    const clock = createManualClock(Date.UTC(2026, 0, 1));
    const store = createMemoryStore({ clock });
    const w1 = createLeases(store, { holder: 'w1', ttlMs: 10_000 });
    const w2 = createLeases(store, { holder: 'w2', ttlMs: 10_000 });
    const operator = createOperator(store, { by: 'ops' });

    const first = await w1.claimOrThrow('job:1', { runId: 'r1' });
    await w2.claim('job:1');
    clock.advance(4_000);
    await w1.renew(first);
    await w1.fencedWrite(first, () => 'ok');
    clock.advance(10_000);
    await w1.fencedWrite(first, () => 'late');
    clock.advance(1_500);
    const second = await w2.claimOrThrow('job:1');
    await operator.revoke('job:1', { reason: 'stuck' });
    clock.advance(250);
    const third = await w1.claimOrThrow('job:1');
    await w1.release(third);

    const metrics = await collect();
    expect(metrics.get(METRIC.claims)?.descriptor.unit).toBe('{claim}');
    expect(points(metrics.get(METRIC.claims))).toEqual({
      '{"leasefence.claim.outcome":"granted"}': 3,
      '{"leasefence.claim.outcome":"held"}': 1,
    });
    expect(points(metrics.get(METRIC.refusals))).toEqual({
      '{"leasefence.operation":"fencedWrite","leasefence.refusal.reason":"expired"}': 1,
    });
    expect(points(metrics.get(METRIC.fencedWrites))).toEqual({
      '{"leasefence.outcome":"accepted"}': 1,
      '{"leasefence.outcome":"refused","leasefence.refusal.reason":"expired"}': 1,
    });
    // first expired at 14 s, second granted at 15.5 s; second revoked at 15.5 s, third granted at 15.75 s.
    expect(metrics.get(METRIC.takeoverDuration)?.descriptor.unit).toBe('s');
    expect(points(metrics.get(METRIC.takeoverDuration))).toEqual({
      '{"leasefence.previous.ending":"expired"}': { count: 1, sum: 1.5 },
      '{"leasefence.previous.ending":"revoked"}': { count: 1, sum: 0.25 },
    });
    expect(points(metrics.get(METRIC.renewMargin))).toEqual({ '{}': { count: 1, sum: 6 } });
    // first: dropped at its refused write; second: still believed held (w2 never learned of the revoke); third: released.
    expect(points(metrics.get(METRIC.leasesHeld))).toEqual({ '{}': 1 });
    expect(Object.keys(points(metrics.get(METRIC.operationDuration))).sort()).toEqual(
      [
        '{"leasefence.operation":"claim","leasefence.outcome":"ok"}',
        '{"leasefence.operation":"claim","leasefence.outcome":"refused"}',
        '{"leasefence.operation":"fencedWrite","leasefence.outcome":"ok"}',
        '{"leasefence.operation":"fencedWrite","leasefence.outcome":"refused"}',
        '{"leasefence.operation":"release","leasefence.outcome":"ok"}',
        '{"leasefence.operation":"renew","leasefence.outcome":"ok"}',
        '{"leasefence.operation":"revoke","leasefence.outcome":"ok"}',
      ].sort(),
    );
    void second;

    const finished = spans();
    expect(finished.map((span) => span.name)).toEqual([
      'leasefence claim',
      'leasefence claim',
      'leasefence renew',
      'leasefence fencedWrite',
      'leasefence fencedWrite',
      'leasefence claim',
      'leasefence revoke',
      'leasefence claim',
      'leasefence release',
    ]);
    expect(finished[0]?.attributes).toEqual({
      'leasefence.operation': 'claim',
      'leasefence.lease.key': 'job:1',
      'leasefence.lease.holder': 'w1',
      'leasefence.lease.run_id': 'r1',
      'leasefence.outcome': 'granted',
      'leasefence.lease.token': '1',
    });
    expect(finished[4]?.attributes).toMatchObject({
      'leasefence.outcome': 'refused',
      'leasefence.refusal.reason': 'expired',
      'leasefence.lease.token': '1',
    });
    expect(finished[4]?.status.code).toBe(0);
    const everything =
      JSON.stringify(finished.map((span) => [span.name, span.attributes, span.events])) +
      JSON.stringify([...metrics.values()].map((metric) => metric.dataPoints));
    for (const lease of [first, second, third]) expect(everything).not.toContain(lease.export().secret);
  });

  it('ends the span of an operation that threw with status ERROR and error.type', async () => {
    const { collect, spans } = instrument();
    const broken = { ...createMemoryStore(), renew: () => Promise.reject(new StoreUnavailableError('down')) } as Store;
    const leases = createLeases(broken, { holder: 'w1' });
    const lease = await leases.claimOrThrow('job:2');
    await expect(leases.renew(lease)).rejects.toBeInstanceOf(StoreUnavailableError);
    const span = spans().find((finished) => finished.name === 'leasefence renew');
    expect(span?.status).toMatchObject({ code: 2, message: 'down' });
    expect(span?.attributes['error.type']).toBe('STORE_UNAVAILABLE');
    expect(points((await collect()).get(METRIC.operationDuration))).toHaveProperty([
      '{"leasefence.operation":"renew","error.type":"STORE_UNAVAILABLE"}',
    ]);
  });

  it('counts a lease withLease lost, by code and reason, and stops counting it as held', async () => {
    const { collect } = instrument();
    const store = createMemoryStore();
    const leases = createLeases(store, { holder: 'w1' });
    await leases.withLease(
      'job:3',
      async (lease, signal) => {
        await createOperator(store).revoke(lease.key, { reason: 'rebalance' });
        // NOTE: the memory store pushes the revoke to this run at once: the signal may have aborted already.
        if (!signal.aborted) await new Promise((resolve) => signal.addEventListener('abort', resolve, { once: true }));
      },
      { ttlMs: 300 },
    );
    const metrics = await collect();
    expect(points(metrics.get(METRIC.leasesLost))).toEqual({
      '{"leasefence.lost.code":"LEASE_LOST","leasefence.refusal.reason":"revoked"}': 1,
    });
    expect(points(metrics.get(METRIC.leasesHeld))).toEqual({ '{}': 0 });
  });

  it('counts claim-next grants and idles with the claims, holds the granted item, and refuses no lease on idle', async () => {
    const { collect } = instrument();
    const clock = createManualClock(Date.UTC(2026, 0, 1));
    const store = createMemoryStore({ clock });
    const w1 = createLeases(store, { holder: 'w1', ttlMs: 10_000 });
    await w1.addItems('scans', ['scan:a']);
    const granted = await w1.claimNext('scans', { runId: 'r1' });
    await w1.claimNext('scans');
    clock.advance(10_000);
    const takeover = await w1.claimNext('scans', { runId: 'r2' });
    if (takeover.ok) await w1.release(takeover.lease);

    const metrics = await collect();
    expect(granted.ok).toBe(true);
    expect(points(metrics.get(METRIC.claims))).toEqual({
      '{"leasefence.claim.outcome":"granted"}': 2,
      '{"leasefence.claim.outcome":"idle"}': 1,
    });
    expect(metrics.get(METRIC.refusals)).toBeUndefined();
    expect(points(metrics.get(METRIC.takeoverDuration))).toEqual({ '{"leasefence.previous.ending":"expired"}': { count: 1, sum: 0 } });
    // NOTE: held under the item's key (the release dropped the takeover); the first grant expired only on the
    // store's manual clock, and the gauge counts by the worker's own clock.
    expect(points(metrics.get(METRIC.leasesHeld))).toEqual({ '{}': 1 });
  });
});
