/**
 * Turns leasefence's diagnostics_channel events (`events.ts`) into OpenTelemetry metrics and spans.
 * Spans are INTERNAL, start when an operation starts and end when it settles; a refusal is an outcome,
 * not an error (status unset, `leasefence.refusal.reason` set); an operation that threw ends with status
 * ERROR and `error.type`. Nothing secret is recorded: the events carry none.
 */
import { SpanKind, SpanStatusCode, metrics, trace, type Attributes, type Meter, type Span, type Tracer } from '@opentelemetry/api';
import { tracingChannel, channel, type TracingChannelSubscribers } from 'node:diagnostics_channel';
import { LEASE_LOST_CHANNEL, LEASE_OPERATIONS, type LeaseLostEvent, type OperationEvent } from '../events.js';
import { ATTRIBUTE, METRIC, spanName } from './names.js';

/** Options of `instrumentLeasefence`. */
export interface InstrumentationOptions {
  /** The meter to record on. @default metrics.getMeter('leasefence') (the global MeterProvider) */
  readonly meter?: Meter;
  /** The tracer to start spans on. @default trace.getTracer('leasefence') (the global TracerProvider) */
  readonly tracer?: Tracer;
  /** Record spans. @default true */
  readonly spans?: boolean;
}

/** A running instrumentation. */
export interface Instrumentation {
  /** Unsubscribes from every channel (in-flight operations are no longer recorded). */
  disable(): void;
}

/** The class of an error, for `error.type`: its leasefence code, else its name. */
function errorType(error: unknown): string {
  if (typeof error === 'object' && error !== null) {
    const { code, name } = error as { code?: unknown; name?: unknown };
    if (typeof code === 'string' && code !== '') return code;
    if (typeof name === 'string' && name !== '') return name;
  }
  return '_OTHER';
}

/**
 * Records leasefence's metrics and spans from its events, for every `Leases` in the process (whichever
 * copy of leasefence made it).
 *
 * ```ts
 * import { instrumentLeasefence } from 'leasefence/otel';
 * const instrumentation = instrumentLeasefence(); // after your OpenTelemetry SDK is set up
 * ```
 */
export function instrumentLeasefence(options: InstrumentationOptions = {}): Instrumentation {
  const meter = options.meter ?? metrics.getMeter('leasefence');
  const tracer = options.tracer ?? trace.getTracer('leasefence');
  const withSpans = options.spans !== false;

  const leasesHeld = meter.createUpDownCounter(METRIC.leasesHeld, { unit: '{lease}', description: 'Leases held by this process, as far as it knows' });
  const claims = meter.createCounter(METRIC.claims, { unit: '{claim}', description: 'Claims by outcome' });
  const refusals = meter.createCounter(METRIC.refusals, { unit: '{refusal}', description: 'Fence refusals by operation and reason' });
  const takeover = meter.createHistogram(METRIC.takeoverDuration, { unit: 's', description: 'Time from the end of a grant to the next grant of its key' });
  const renewMargin = meter.createHistogram(METRIC.renewMargin, { unit: 's', description: 'Time a grant had left when its renewal landed' });
  const fencedWrites = meter.createCounter(METRIC.fencedWrites, { unit: '{write}', description: 'Fenced writes by outcome' });
  const leasesLost = meter.createCounter(METRIC.leasesLost, { unit: '{lease}', description: 'Leases withLease lost, by cause' });
  const duration = meter.createHistogram(METRIC.operationDuration, { unit: 's', description: 'Duration of leasefence operations' });

  /** The grants this process holds: `key NUL token`. */
  const held = new Set<string>();
  const hold = (key: string, token: bigint): void => {
    const id = `${key}\u0000${token}`;
    if (held.has(id)) return;
    held.add(id);
    leasesHeld.add(1);
  };
  const drop = (key: string, token: bigint | null): void => {
    if (token === null || !held.delete(`${key}\u0000${token}`)) return;
    leasesHeld.add(-1);
  };

  const spans = new WeakMap<OperationEvent, { readonly span: Span | null; readonly started: number }>();

  const onStart = (event: OperationEvent): void => {
    const attributes: Attributes = { [ATTRIBUTE.operation]: event.operation, [ATTRIBUTE.key]: event.key, [ATTRIBUTE.holder]: event.holder };
    if (event.token !== null) attributes[ATTRIBUTE.token] = event.token.toString();
    if (event.runId !== null) attributes[ATTRIBUTE.runId] = event.runId;
    const span = withSpans ? tracer.startSpan(spanName(event.operation), { kind: SpanKind.INTERNAL, attributes }) : null;
    spans.set(event, { span, started: performance.now() });
  };

  const onSettled = (event: OperationEvent): void => {
    const begun = spans.get(event);
    spans.delete(event);
    const { operation, outcome } = event;
    const metricAttributes: Attributes = { [ATTRIBUTE.operation]: operation };
    if (outcome === undefined) {
      metricAttributes[ATTRIBUTE.errorType] = errorType(event.error);
      begun?.span?.setAttribute(ATTRIBUTE.errorType, errorType(event.error));
      begun?.span?.setStatus({ code: SpanStatusCode.ERROR, message: event.error instanceof Error ? event.error.message : String(event.error) });
    } else {
      metricAttributes[ATTRIBUTE.outcome] = outcome.ok ? 'ok' : 'refused';
      begun?.span?.setAttribute(ATTRIBUTE.outcome, outcome.result);
      if (outcome.token !== null) begun?.span?.setAttribute(ATTRIBUTE.token, outcome.token.toString());
      if (!outcome.ok) {
        begun?.span?.setAttribute(ATTRIBUTE.refusalReason, outcome.reason);
        if (operation !== 'claim' && operation !== 'revoke') {
          refusals.add(1, { [ATTRIBUTE.operation]: operation, [ATTRIBUTE.refusalReason]: outcome.reason });
          drop(event.key, event.token);
        }
      }
      record(event);
    }
    if (begun !== undefined) duration.record((performance.now() - begun.started) / 1000, metricAttributes);
    begun?.span?.end();
  };

  /** The metrics of one settled operation's outcome. */
  const record = (event: OperationEvent): void => {
    const { operation, outcome, key } = event;
    if (outcome === undefined) return;
    if (operation === 'claim') {
      claims.add(1, { [ATTRIBUTE.claimOutcome]: outcome.result });
      if (outcome.result === 'granted') {
        hold(key, outcome.token);
        if (outcome.previous !== null) {
          takeover.record(Math.max(0, outcome.acquiredAt - outcome.previous.at) / 1000, { [ATTRIBUTE.previousEnding]: outcome.previous.kind });
        }
      }
    } else if (operation === 'renew' && outcome.result === 'renewed' && outcome.marginMs !== null) {
      renewMargin.record(outcome.marginMs / 1000);
    } else if (operation === 'fencedWrite') {
      fencedWrites.add(1, outcome.ok ? { [ATTRIBUTE.outcome]: 'accepted' } : { [ATTRIBUTE.outcome]: 'refused', [ATTRIBUTE.refusalReason]: outcome.reason });
    } else if (operation === 'release' && outcome.ok) {
      drop(key, event.token);
    }
  };

  const subscribers: TracingChannelSubscribers<OperationEvent> = {
    start: onStart,
    end: () => undefined,
    asyncStart: () => undefined,
    asyncEnd: onSettled,
    error: () => undefined,
  };
  const traced = LEASE_OPERATIONS.map((operation) => tracingChannel<OperationEvent, OperationEvent>(`leasefence:${operation}`));
  for (const channelOf of traced) channelOf.subscribe(subscribers);

  const lost = channel(LEASE_LOST_CHANNEL);
  const onLost = (message: unknown): void => {
    const event = message as LeaseLostEvent;
    drop(event.key, event.token);
    leasesLost.add(1, { [ATTRIBUTE.lostCode]: event.code, ...(event.reason === null ? {} : { [ATTRIBUTE.refusalReason]: event.reason }) });
  };
  lost.subscribe(onLost);

  return {
    disable() {
      for (const channelOf of traced) channelOf.unsubscribe(subscribers);
      lost.unsubscribe(onLost);
    },
  };
}
