/**
 * `leasefence/otel` wired to the OpenTelemetry SDK's in-memory exporters, for the otel tests: one
 * instrumentation at a time, which `disableInstrumentation` (each file's `afterEach`) turns off.
 */
import {
  AggregationTemporality,
  InMemoryMetricExporter,
  MeterProvider,
  PeriodicExportingMetricReader,
  type MetricData,
} from '@opentelemetry/sdk-metrics';
import { BasicTracerProvider, InMemorySpanExporter, SimpleSpanProcessor } from '@opentelemetry/sdk-trace-base';
import { instrumentLeasefence, METRIC, type Instrumentation, type InstrumentationOptions } from '../../src/otel/index.js';

let instrumentation: Instrumentation | null = null;

/** Turns off the instrumentation `instrument` enabled, if any. */
export function disableInstrumentation(): void {
  instrumentation?.disable();
  instrumentation = null;
}

/** Enables the instrumentation with in-memory exporters; returns how to read what it exported. */
export function instrument(options: Omit<InstrumentationOptions, 'meter' | 'tracer'> = {}) {
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
  /** Every metric exported so far, by name. */
  const collect = async (): Promise<Map<string, MetricData>> => {
    await reader.forceFlush();
    const exported = metricExporter.getMetrics().at(-1);
    return new Map((exported?.scopeMetrics ?? []).flatMap((scope) => scope.metrics).map((metric) => [metric.descriptor.name, metric]));
  };
  const metric = async (name: string): Promise<MetricData | undefined> => (await collect()).get(name);
  /** The leases the instrumentation counts as held now. */
  const held = async (): Promise<number> => ((await metric(METRIC.leasesHeld))?.dataPoints[0]?.value as number | undefined) ?? 0;
  return { collect, metric, held, spans: () => spanExporter.getFinishedSpans() };
}
