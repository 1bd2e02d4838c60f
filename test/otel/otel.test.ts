/**
 * `leasefence/otel` with the OpenTelemetry SDK's in-memory exporters: the metrics and spans a lease's life
 * produces, with their names, units and attributes, and no secret anywhere.
 */
import {
  AggregationTemporality,
  InMemoryMetricExporter,
  MeterProvider,
  PeriodicExportingMetricReader,
  type DataPoint,
  type Histogram,
  type MetricData,
} from '@opentelemetry/sdk-metrics';
import { BasicTracerProvider, InMemorySpanExporter, SimpleSpanProcessor } from '@opentelemetry/sdk-trace-base';
import { afterEach, describe, expect, it } from 'vitest';
import { createManualClock } from '../../src/clock.js';
import { createMemoryStore } from '../../src/adapters/memory/index.js';
import { StoreUnavailableError } from '../../src/errors.js';
import { createLeases } from '../../src/leases.js';
import { createOperator } from '../../src/operator.js';
import { instrumentLeasefence, METRIC, type Instrumentation } from '../../src/otel/index.js';
import type { Store } from '../../src/store.js';

let instrumentation: Instrumentation | null = null;
afterEach(() => {
  instrumentation?.disable();
  instrumentation = null;
});

function setUp() {
  const metricExporter = new InMemoryMetricExporter(AggregationTemporality.CUMULATIVE);
  const reader = new PeriodicExportingMetricReader({ exporter: metricExporter, exportIntervalMillis: 60_000 });
  const meterProvider = new MeterProvider({ readers: [reader] });
  const spanExporter = new InMemorySpanExporter();
  const tracerProvider = new BasicTracerProvider({ spanProcessors: [new SimpleSpanProcessor(spanExporter)] });
  instrumentation = instrumentLeasefence({ meter: meterProvider.getMeter('leasefence'), tracer: tracerProvider.getTracer('leasefence') });
  const collect = async (): Promise<Map<string, MetricData>> => {
    await reader.forceFlush();
    const exported = metricExporter.getMetrics().at(-1);
    return new Map((exported?.scopeMetrics ?? []).flatMap((scope) => scope.metrics).map((metric) => [metric.descriptor.name, metric]));
  };
  return { collect, spans: () => spanExporter.getFinishedSpans() };
}

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
    const { collect, spans } = setUp();
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
    const { collect, spans } = setUp();
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
    const { collect } = setUp();
    const store = createMemoryStore();
    const leases = createLeases(store, { holder: 'w1' });
    await leases.withLease(
      'job:3',
      async (lease, signal) => {
        await createOperator(store).revoke(lease.key, { reason: 'rebalance' });
        await new Promise((resolve) => signal.addEventListener('abort', resolve, { once: true }));
      },
      { ttlMs: 300 },
    );
    const metrics = await collect();
    expect(points(metrics.get(METRIC.leasesLost))).toEqual({
      '{"leasefence.lost.code":"LEASE_LOST","leasefence.refusal.reason":"revoked"}': 1,
    });
    expect(points(metrics.get(METRIC.leasesHeld))).toEqual({ '{}': 0 });
  });
});
