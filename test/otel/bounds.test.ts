/**
 * Issue 29 item 13: what `leasefence/otel` keeps and exports is bounded. The grants it counts as held are
 * dropped at the expiry the grant announced (a grant that expires, is handed to another process or revoked
 * elsewhere is never heard of again) and capped in number; `error.type` takes only leasefence's codes or
 * `_OTHER`; a refused oversized name is exported cut to the longest valid one; a refused fenced write's
 * span keeps the token its holder presented.
 */
import {
  AggregationTemporality,
  InMemoryMetricExporter,
  MeterProvider,
  PeriodicExportingMetricReader,
  type DataPoint,
  type MetricData,
} from '@opentelemetry/sdk-metrics';
import { BasicTracerProvider, InMemorySpanExporter, SimpleSpanProcessor } from '@opentelemetry/sdk-trace-base';
import { afterEach, describe, expect, it } from 'vitest';
import { createManualClock } from '../../src/clock.js';
import { createMemoryStore } from '../../src/adapters/memory/index.js';
import { StoreUnavailableError } from '../../src/errors.js';
import { createLeases } from '../../src/leases.js';
import { createOperator } from '../../src/operator.js';
import { ATTRIBUTE, instrumentLeasefence, METRIC, type Instrumentation, type InstrumentationOptions } from '../../src/otel/index.js';
import type { Store } from '../../src/store.js';
import { MAX_NAME_BYTES } from '../../src/validate.js';

let instrumentation: Instrumentation | null = null;
afterEach(() => {
  instrumentation?.disable();
  instrumentation = null;
});

function setUp(options: Omit<InstrumentationOptions, 'meter' | 'tracer'> = {}) {
  const metricExporter = new InMemoryMetricExporter(AggregationTemporality.CUMULATIVE);
  const reader = new PeriodicExportingMetricReader({ exporter: metricExporter, exportIntervalMillis: 60_000 });
  const meterProvider = new MeterProvider({ readers: [reader] });
  const spanExporter = new InMemorySpanExporter();
  const tracerProvider = new BasicTracerProvider({ spanProcessors: [new SimpleSpanProcessor(spanExporter)] });
  instrumentation = instrumentLeasefence({
    ...options,
    meter: meterProvider.getMeter('leasefence'),
    tracer: tracerProvider.getTracer('leasefence'),
  });
  const metric = async (name: string): Promise<MetricData | undefined> => {
    await reader.forceFlush();
    const exported = metricExporter.getMetrics().at(-1);
    return (exported?.scopeMetrics ?? []).flatMap((scope) => scope.metrics).find((found) => found.descriptor.name === name);
  };
  const held = async (): Promise<number> => ((await metric(METRIC.leasesHeld))?.dataPoints[0]?.value as number | undefined) ?? 0;
  return { metric, held, spans: () => spanExporter.getFinishedSpans() };
}

const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));

describe('the leases counted as held are bounded', () => {
  it('grants that expire unheard of are dropped at the expiry their grant announced', async () => {
    const { held } = setUp();
    const leases = createLeases(createMemoryStore(), { holder: 'w1' });
    for (let index = 0; index < 2_000; index += 1) await leases.claimOrThrow(`job:${index}`, { ttlMs: 3_000 });
    const kept = await leases.claimOrThrow('job:kept', { ttlMs: 60_000 });
    expect(await held()).toBe(2_001);
    await sleep(3_100);
    expect(await held()).toBe(1);
    void kept;
  });

  it('a grant handed to another process (renewed there) or revoked elsewhere is dropped at its last known expiry; a renewal here moves it', async () => {
    const { held } = setUp();
    const store = createMemoryStore();
    const here = createLeases(store, { holder: 'w1' });
    const handed = await here.claimOrThrow('job:handed', { ttlMs: 200 });
    const revoked = await here.claimOrThrow('job:revoked', { ttlMs: 200 });
    const renewed = await here.claimOrThrow('job:renewed', { ttlMs: 200 });
    // NOTE: another process renews `handed` from its exported handle: this process never hears of it.
    await createOperator(store).revoke(revoked.key, { reason: 'moved' });
    expect(await held()).toBe(3);
    await here.renew(renewed, { ttlMs: 60_000 });
    await sleep(300);
    expect(await held()).toBe(1);
    void handed;
  });

  it('at most maxHeldLeases grants are kept (past it, the oldest go first)', async () => {
    const { held } = setUp({ maxHeldLeases: 100 });
    const leases = createLeases(createMemoryStore(), { holder: 'w1' });
    for (let index = 0; index < 100; index += 1) await leases.claimOrThrow(`job:${index}`, { ttlMs: null });
    expect(await held()).toBe(100);
    for (let index = 100; index < 1_000; index += 1) await leases.claimOrThrow(`job:${index}`, { ttlMs: null });
    const count = await held();
    expect(count).toBeLessThanOrEqual(100);
    expect(count).toBeGreaterThanOrEqual(90);
  });
});

describe('exported values are bounded', () => {
  it('error.type is a leasefence code or _OTHER, whatever code a store or callback throws', async () => {
    const { metric, spans } = setUp();
    let thrown = 0;
    const store = createMemoryStore();
    const broken = {
      ...store,
      claim: store.claim.bind(store),
      renew: () => {
        thrown += 1;
        return Promise.reject(Object.assign(new Error('driver'), { code: `E_DRIVER_${thrown}` }));
      },
    } as Store;
    const leases = createLeases(broken, { holder: 'w1' });
    const lease = await leases.claimOrThrow('job:1');
    for (let index = 0; index < 20; index += 1) await leases.renew(lease).catch(() => undefined);
    for (let index = 0; index < 20; index += 1) {
      await leases
        .fencedWrite(lease, () => {
          throw Object.assign(new Error('app'), { code: `E_APP_${index}`, name: `AppError${index}` });
        })
        .catch(() => undefined);
    }
    const storeDown = createLeases({ ...store, renew: () => Promise.reject(new StoreUnavailableError('down')) } as Store, { holder: 'w1' });
    await storeDown.renew(await storeDown.claimOrThrow('job:2')).catch(() => undefined);
    const types = new Set(
      ((await metric(METRIC.operationDuration))?.dataPoints ?? [])
        .map((point: DataPoint<unknown>) => point.attributes[ATTRIBUTE.errorType])
        .filter((type) => type !== undefined),
    );
    expect([...types].sort()).toEqual(['STORE_UNAVAILABLE', '_OTHER']);
    const spanTypes = new Set(
      spans()
        .map((span) => span.attributes[ATTRIBUTE.errorType])
        .filter((type) => type !== undefined),
    );
    expect([...spanTypes].sort()).toEqual(['STORE_UNAVAILABLE', '_OTHER']);
  });

  it('a refused 16 MiB key, holder, run id or revoker is exported cut to the longest valid name; valid names whole', async () => {
    const { spans } = setUp();
    const store = createMemoryStore();
    const leases = createLeases(store, { holder: 'w1' });
    const huge = 'k'.repeat(16 * 1024 * 1024);
    await expect(leases.claim(huge)).rejects.toMatchObject({ code: 'INVALID_ARGUMENT' });
    await expect(leases.claim('job:1', { runId: huge })).rejects.toMatchObject({ code: 'INVALID_ARGUMENT' });
    await expect(createOperator(store, { by: 'ops' }).revoke(huge, { reason: 'x' })).rejects.toMatchObject({ code: 'INVALID_ARGUMENT' });
    await expect(leases.revoke('job:1', { reason: 'x', by: huge })).rejects.toMatchObject({ code: 'INVALID_ARGUMENT' });
    const longest = '鍵'.repeat(MAX_NAME_BYTES / 4) + 'k'.repeat(MAX_NAME_BYTES / 4); // 1,024 bytes, 512 units
    const valid = await leases.claimOrThrow(longest, { runId: longest });
    await leases.release(valid);
    const exported = spans();
    for (const span of exported) {
      for (const value of Object.values(span.attributes))
        if (typeof value === 'string') expect(value.length).toBeLessThanOrEqual(MAX_NAME_BYTES + 1);
      if (span.status.message !== undefined) expect(span.status.message.length).toBeLessThanOrEqual(MAX_NAME_BYTES + 1);
    }
    expect(
      exported.filter((span) => span.attributes[ATTRIBUTE.key] === longest && span.attributes[ATTRIBUTE.runId] === longest),
    ).toHaveLength(2);
  });

  it("a refused stale write's span keeps the token its holder presented, not the one it found", async () => {
    const { spans } = setUp();
    const clock = createManualClock(Date.UTC(2026, 0, 1));
    const store = createMemoryStore({ clock });
    const w1 = createLeases(store, { holder: 'w1', ttlMs: 1_000 });
    const w2 = createLeases(store, { holder: 'w2', ttlMs: 1_000 });
    const stale = await w1.claimOrThrow('job:1');
    clock.advance(2_000);
    const current = await w2.claimOrThrow('job:1');
    expect(current.token).not.toBe(stale.token);
    expect(await w1.fencedWrite(stale, () => 'late')).toMatchObject({ ok: false, reason: 'superseded' });
    const refusedClaim = await w1.claim('job:1');
    expect(refusedClaim).toMatchObject({ ok: false, reason: 'held' });
    const [write] = spans().filter((span) => span.name === 'leasefence fencedWrite');
    expect(write?.attributes).toMatchObject({
      [ATTRIBUTE.holder]: 'w1',
      [ATTRIBUTE.token]: stale.token.toString(),
      [ATTRIBUTE.refusalReason]: 'superseded',
    });
    // NOTE: a refused claim presented no token: w2's is not recorded under w1.
    const claimSpan = spans()
      .filter((span) => span.name === 'leasefence claim')
      .at(-1);
    expect(claimSpan?.attributes).toMatchObject({ [ATTRIBUTE.holder]: 'w1', [ATTRIBUTE.outcome]: 'held' });
    expect(claimSpan?.attributes[ATTRIBUTE.token]).toBeUndefined();
  });
});
