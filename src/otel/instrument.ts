/**
 * Turns leasefence's diagnostics_channel events (`events.ts`) into OpenTelemetry metrics and spans.
 * Spans are INTERNAL, start when an operation starts and end when it settles; a refusal is an outcome,
 * not an error (status unset, `leasefence.refusal.reason` set); an operation that threw ends with status
 * ERROR and `error.type`. Nothing secret is recorded: the events carry none. Everything kept or exported is
 * bounded: the held grants (`held-grants.ts`), `error.type` (leasefence's codes), names (cut at the longest
 * valid one).
 */
import {
  SpanKind,
  SpanStatusCode,
  metrics,
  trace,
  type Attributes,
  type Meter,
  type ObservableResult,
  type Span,
  type Tracer,
} from '@opentelemetry/api';
import { tracingChannel, channel, type TracingChannelSubscribers } from 'node:diagnostics_channel';
import { InvalidArgumentError, isLeaseError, type LeaseErrorCode } from '../errors.js';
import { LEASE_LOST_CHANNEL, LEASE_OPERATIONS, NOT_A_LOSS, type LeaseLostEvent, type OperationEvent } from '../events.js';
import { describe, MAX_NAME_BYTES, readOptions } from '../validate.js';
import { DEFAULT_MAX_HELD_LEASES, heldGrants } from './held-grants.js';
import { ATTRIBUTE, METRIC, spanName } from './names.js';

/** Operations whose refusal is no loss of the caller's own grant (a claim's, an operator's, a set's). */
const NOT_OWN_GRANT: ReadonlySet<string> = new Set([
  'claim',
  'claimNext',
  'acquirePermit',
  'revoke',
  'remove',
  'setKeyState',
  'addItems',
  'removeItems',
]);

/** Options of `instrumentLeasefence`. */
export interface InstrumentationOptions {
  /** The meter to record on. @default metrics.getMeter('leasefence') (the global MeterProvider) */
  readonly meter?: Meter;
  /** The tracer to start spans on. @default trace.getTracer('leasefence') (the global TracerProvider) */
  readonly tracer?: Tracer;
  /** Record spans. @default true */
  readonly spans?: boolean;
  /**
   * How many grants `leasefence.lease.held` tracks at most (each is also dropped at the expiry its grant
   * announced); past it, the oldest are forgotten and the metric counts low. @default 10_000
   */
  readonly maxHeldLeases?: number;
}

/** A running instrumentation. */
export interface Instrumentation {
  /** Unsubscribes from every channel (in-flight operations are no longer recorded). */
  disable(): void;
}

const ERROR_TYPES: ReadonlySet<string> = new Set(
  Object.keys({
    INVALID_ARGUMENT: true,
    LEASE_BUSY: true,
    LEASE_LOST: true,
    LEASE_UNCONFIRMED: true,
    RECOVERY_REQUIRED: true,
    GATE_REFUSED: true,
    STORE_UNAVAILABLE: true,
    OUTCOME_UNKNOWN: true,
    COMMAND_FAILED: true,
    KEY_HELD_BACK: true,
    STATE_MISMATCH: true,
    RUN_ALREADY_ACQUIRED: true,
    WRITE_REFUSED: true,
    SUBMISSION_REPLAYED: true,
    REPLAY_CONFLICT: true,
    TTL_INSUFFICIENT: true,
    UNSUPPORTED_OPERATION: true,
    SEMAPHORE_FULL: true,
    KEY_QUEUED: true,
  } satisfies Record<LeaseErrorCode, true>),
);

/**
 * The class of an error, for `error.type`: its leasefence code, else `_OTHER`. NOTE: never a code or name
 * of the error's own (a driver's, or what a fenced write's callback threw): those are unbounded.
 */
function errorType(error: unknown): string {
  try {
    return isLeaseError(error) && ERROR_TYPES.has(error.code) ? error.code : '_OTHER';
  } catch {
    return '_OTHER';
  }
}

/**
 * `text` cut to `MAX_NAME_BYTES` UTF-16 units, marked with `…`. NOTE: no valid key, holder or run id is
 * longer, so those are exported whole, and a refused one (the span starts before validation) is cut.
 */
function bounded(text: string): string {
  if (text.length <= MAX_NAME_BYTES) return text;
  const cut = (text.charCodeAt(MAX_NAME_BYTES - 1) & 0xfc00) === 0xd800 ? MAX_NAME_BYTES - 1 : MAX_NAME_BYTES;
  return `${text.slice(0, cut)}…`;
}

/** The status message of an operation that threw (what threw may be anything, with getters that throw). */
function errorMessage(error: unknown): string {
  try {
    return bounded(error instanceof Error ? String(error.message) : String(error));
  } catch {
    return typeof error;
  }
}

/** `value` if it has every one of `methods` (a getter or Proxy that throws has none), else `InvalidArgumentError`. */
function checked<T>(what: string, value: unknown, methods: readonly string[]): T {
  let usable: boolean;
  try {
    usable =
      typeof value === 'object' &&
      value !== null &&
      methods.every((method) => typeof (value as Record<string, unknown>)[method] === 'function');
  } catch {
    usable = false;
  }
  if (!usable) throw new InvalidArgumentError(`${what} must be an OpenTelemetry ${what} (with ${methods.join(', ')})`);
  return value as T;
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
export function instrumentLeasefence(options?: InstrumentationOptions): Instrumentation {
  const given = readOptions('instrumentLeasefence options', options, ['meter', 'tracer', 'spans', 'maxHeldLeases']);
  const meter =
    given.meter === undefined
      ? metrics.getMeter('leasefence')
      : checked<Meter>('meter', given.meter, ['createCounter', 'createHistogram', 'createObservableUpDownCounter']);
  const tracer = given.tracer === undefined ? trace.getTracer('leasefence') : checked<Tracer>('tracer', given.tracer, ['startSpan']);
  if (given.spans !== undefined && typeof given.spans !== 'boolean')
    throw new InvalidArgumentError(`spans must be a boolean, got ${describe(given.spans)}`);
  const withSpans = given.spans !== false;
  const maxHeld = given.maxHeldLeases ?? DEFAULT_MAX_HELD_LEASES;
  if (typeof maxHeld !== 'number' || !Number.isSafeInteger(maxHeld) || maxHeld < 1)
    throw new InvalidArgumentError(`maxHeldLeases must be a positive integer, got ${describe(maxHeld)}`);
  const held = heldGrants(maxHeld);

  const leasesHeld = meter.createObservableUpDownCounter(METRIC.leasesHeld, {
    unit: '{lease}',
    description: 'Leases held by this process, as far as it knows',
  });
  const observeHeld = (result: ObservableResult): void => result.observe(held.count());
  leasesHeld.addCallback(observeHeld);
  const claims = meter.createCounter(METRIC.claims, { unit: '{claim}', description: 'Claims by outcome' });
  const refusals = meter.createCounter(METRIC.refusals, { unit: '{refusal}', description: 'Fence refusals by operation and reason' });
  const takeover = meter.createHistogram(METRIC.takeoverDuration, {
    unit: 's',
    description: 'Time from the end of a grant to the next grant of its key',
  });
  const renewMargin = meter.createHistogram(METRIC.renewMargin, {
    unit: 's',
    description: 'Time a grant had left when its renewal landed',
  });
  const fencedWrites = meter.createCounter(METRIC.fencedWrites, { unit: '{write}', description: 'Fenced writes by outcome' });
  const leasesLost = meter.createCounter(METRIC.leasesLost, { unit: '{lease}', description: 'Leases withLease lost, by cause' });
  const duration = meter.createHistogram(METRIC.operationDuration, { unit: 's', description: 'Duration of leasefence operations' });

  const spans = new WeakMap<OperationEvent, { readonly span: Span | null; readonly started: number }>();

  const onStart = (event: OperationEvent): void => {
    const attributes: Attributes = {
      [ATTRIBUTE.operation]: event.operation,
      [ATTRIBUTE.key]: bounded(event.key),
      [ATTRIBUTE.holder]: bounded(event.holder),
    };
    if (event.token !== null) attributes[ATTRIBUTE.token] = event.token.toString();
    if (event.runId !== null) attributes[ATTRIBUTE.runId] = bounded(event.runId);
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
      begun?.span?.setStatus({ code: SpanStatusCode.ERROR, message: errorMessage(event.error) });
    } else {
      metricAttributes[ATTRIBUTE.outcome] = outcome.ok ? 'ok' : 'refused';
      begun?.span?.setAttribute(ATTRIBUTE.outcome, outcome.result);
      // NOTE: a refusal's token is the one the store found (another holder's): the span keeps the presented one.
      if (outcome.ok) begun?.span?.setAttribute(ATTRIBUTE.token, outcome.token.toString());
      if (!outcome.ok) {
        begun?.span?.setAttribute(ATTRIBUTE.refusalReason, outcome.reason);
        // NOTE: only a fence's refusal of the holder's own grant is a refusal metric (and drops the held gauge):
        // not a claim's or an operator's, nor a write that refused itself, a replay or a check's too-little-TTL.
        const ownGrant = !NOT_OWN_GRANT.has(operation);
        if (ownGrant && !NOT_A_LOSS.has(outcome.reason)) {
          refusals.add(1, { [ATTRIBUTE.operation]: operation, [ATTRIBUTE.refusalReason]: outcome.reason });
          held.drop(event.key, event.token);
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
    if (operation === 'claim' || operation === 'claimNext' || operation === 'acquirePermit') {
      claims.add(1, { [ATTRIBUTE.claimOutcome]: outcome.result });
      if (outcome.result === 'granted') {
        held.hold(outcome.item ?? key, outcome.token, outcome.expiresAt, outcome.now);
        if (outcome.previous !== null) {
          takeover.record(Math.max(0, outcome.acquiredAt - outcome.previous.at) / 1000, {
            [ATTRIBUTE.previousEnding]: outcome.previous.kind,
          });
        }
      }
    } else if (operation === 'renew' && outcome.result === 'renewed') {
      held.hold(key, outcome.token, outcome.expiresAt, outcome.now);
      if (outcome.marginMs !== null) renewMargin.record(outcome.marginMs / 1000);
    } else if (operation === 'fencedWrite') {
      fencedWrites.add(
        1,
        outcome.ok ? { [ATTRIBUTE.outcome]: 'accepted' } : { [ATTRIBUTE.outcome]: 'refused', [ATTRIBUTE.refusalReason]: outcome.reason },
      );
    } else if (operation === 'release' && outcome.ok) {
      held.drop(key, event.token);
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
    held.drop(event.key, event.token);
    leasesLost.add(1, { [ATTRIBUTE.lostCode]: event.code, ...(event.reason === null ? {} : { [ATTRIBUTE.refusalReason]: event.reason }) });
  };
  lost.subscribe(onLost);

  return {
    disable() {
      for (const channelOf of traced) channelOf.unsubscribe(subscribers);
      lost.unsubscribe(onLost);
      leasesHeld.removeCallback(observeHeld);
    },
  };
}
