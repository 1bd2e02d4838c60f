/**
 * What leasefence tells observers, on `node:diagnostics_channel`: one `TracingChannel` per lease operation
 * (`tracing:leasefence:claim:start`, `...:end`, `...:asyncStart`, `...:asyncEnd`, `...:error`) and a
 * channel for a lease `withLease` lost (`leasefence:lease-lost`). Subscribe from any copy of leasefence in
 * the process: channels are global by name.
 *
 * - **No secrets.** A context carries the key, token, holder and run id, and the outcome as a summary
 *   built here (never the lease handle, whose `fence()` holds the secret, nor a fenced write's value).
 * - **Zero cost unsubscribed.** Each operation checks its channels' `hasSubscribers` and, when nobody
 *   listens, calls straight through: no context object, no closure (see BENCHMARKS.md).
 *
 * ```ts
 * import diagnostics_channel from 'node:diagnostics_channel';
 * diagnostics_channel.tracingChannel('leasefence:fencedWrite').subscribe({
 *   asyncEnd: (event) => { if (!event.outcome.ok) log.warn({ key: event.key, reason: event.outcome.reason }, 'fenced write refused'); },
 * });
 * ```
 */
import { tracingChannel, channel, type TracingChannel } from 'node:diagnostics_channel';
import type { LeaseError } from './errors.js';
import type { EndingKind, StoreTime } from './fence/types.js';

/** The operations that publish on a `TracingChannel` named `leasefence:<operation>`. */
export type LeaseOperation =
  | 'claim'
  | 'renew'
  | 'checkpoint'
  | 'fencedWrite'
  | 'check'
  | 'release'
  | 'revoke'
  | 'recover'
  | 'setKeyState'
  | 'remove'
  | 'addItems'
  | 'removeItems'
  | 'claimNext'
  | 'acquirePermit';

/** Every traced operation, in the order of a lease's life. */
export const LEASE_OPERATIONS: readonly LeaseOperation[] = [
  'claim',
  'renew',
  'checkpoint',
  'fencedWrite',
  'check',
  'release',
  'revoke',
  'recover',
  'setKeyState',
  'remove',
  'addItems',
  'removeItems',
  'claimNext',
  'acquirePermit',
];

/**
 * Refusals that are no loss of the grant: a fenced write that refused itself, a submission's replay or
 * conflict, a check with too little TTL left. Observers count them apart from the fence's refusals.
 */
export const NOT_A_LOSS: ReadonlySet<string> = new Set(['write-refused', 'replayed', 'replay-conflict', 'ttl-insufficient']);

/** Why a claim was refused (`ClaimRefusal['reason']`). */
export type ClaimRefusalReason = 'held' | 'recovery-required' | 'held-back' | 'state-mismatch' | 'queued' | 'run-already-acquired';

/** How an operation ended, as observers see it. */
export type OperationOutcome =
  /**
   * A claim that was granted: its grant, and how the previous one ended (for takeover latency). For `claimNext`
   * (whose event's `key` is the set) `item` is the key granted; for `acquirePermit` (whose event's `key` is the
   * semaphore) the permit's key.
   */
  | {
      readonly ok: true;
      readonly result: 'granted';
      readonly item?: string;
      readonly token: bigint;
      readonly acquiredAt: StoreTime;
      readonly expiresAt: StoreTime | null;
      readonly previous: { readonly kind: EndingKind; readonly token: bigint; readonly at: StoreTime } | null;
      readonly now: StoreTime;
    }
  /**
   * A claim that was refused: held by another grant, waiting for a recovering claim, held back until a time,
   * its `expect` not matching the key's state (`token`: `null`), or this holder and run holding it already.
   */
  | {
      readonly ok: false;
      readonly result: ClaimRefusalReason;
      readonly reason: ClaimRefusalReason;
      readonly token: bigint | null;
      readonly holder: string | null;
      readonly now: StoreTime;
    }
  /** An acquire that found the semaphore full: how many permits were live, and when one may free (`nextAt`). */
  | {
      readonly ok: false;
      readonly result: 'full';
      readonly reason: 'full';
      readonly token: null;
      readonly live: number;
      readonly nextAt: StoreTime | null;
      readonly now: StoreTime;
    }
  /** A claim-next that found no item claimable, and when one may be (`nextAt`). */
  | {
      readonly ok: false;
      readonly result: 'idle';
      readonly reason: 'idle';
      readonly token: null;
      readonly nextAt: StoreTime | null;
      readonly now: StoreTime;
    }
  /** A renew that extended the grant; `marginMs`: how much of the grant was left, by its previous expiry, when it landed. */
  | {
      readonly ok: true;
      readonly result: 'renewed';
      readonly token: bigint;
      readonly expiresAt: StoreTime | null;
      readonly marginMs: number | null;
      readonly now: StoreTime;
    }
  /** Any other operation that applied (`token`: the key's token afterwards; for a revoke, the moved-on one). */
  | { readonly ok: true; readonly result: 'applied'; readonly token: bigint; readonly now: StoreTime }
  /**
   * A refusal: a fence verdict's reason, a revoke's (`missing`, `not-held`, `superseded`), or a fenced write's own
   * (`write-refused`, `replayed`, `replay-conflict`).
   */
  | { readonly ok: false; readonly result: 'refused'; readonly reason: string; readonly token: bigint | null; readonly now: StoreTime };

/** The context object of every event of one operation (the same object from `start` to `asyncEnd`). */
export interface OperationEvent {
  readonly operation: LeaseOperation;
  /** The key (for `addItems`, `removeItems` and `claimNext`: the set). */
  readonly key: string;
  /** The lease's token (`null` for a claim, until its outcome). */
  readonly token: bigint | null;
  /** The worker (for a revoke, remove or setKeyState: who it is recorded `by`) that ran it. */
  readonly holder: string;
  readonly runId: string | null;
  /** Set before `asyncStart` when the operation resolved. */
  outcome?: OperationOutcome;
  /** Set before `error` when the operation threw (bad input, store unavailable, outcome unknown). */
  error?: unknown;
}

/** What `leasefence:lease-lost` publishes: `withLease` aborted its signal. */
export interface LeaseLostEvent {
  readonly key: string;
  readonly token: bigint;
  readonly holder: string;
  readonly runId: string | null;
  /** `LEASE_LOST` (a store refused the fence) or `LEASE_UNCONFIRMED` (no renewal confirmed in time). */
  readonly code: string;
  /** For `LEASE_LOST`: the fence refusal's reason (`expired`, `revoked`, `superseded`, ...). */
  readonly reason: string | null;
  /** The error's message (describes the refusal: tokens, holders, run ids; never the secret). */
  readonly message: string;
}

/** The name of the channel `withLease` publishes a lost lease on. */
export const LEASE_LOST_CHANNEL = 'leasefence:lease-lost';

/**
 * The tracing channel of one operation: its context (and store) is the operation's event.
 * NOTE: both type arguments are the event: @types/node 20-24 read `TracingChannel<StoreType, ContextType>`,
 * @types/node 26 `TracingChannel<ContextType extends object, StoreType>`; only this pair is valid in both orders.
 */
export type OperationTracingChannel = TracingChannel<OperationEvent, OperationEvent>;

/**
 * What `leasefence:wait-polling` publishes: a waiting claim's queue for a key started without release
 * notifications, so it tries every `pollMs` (and at the holder's expiry) instead of waking at a release.
 */
export interface WaitPollingEvent {
  readonly key: string;
  /** `no-notification-connection`: the store has no `watchFreed` (created without `listener` / `subscriber`); `subscribe-failed`: its subscription failed or timed out. */
  readonly reason: 'no-notification-connection' | 'subscribe-failed';
  readonly pollMs: number;
}

/** The name of the channel a waiting claim announces on that it polls (no release notifications). */
export const WAIT_POLLING_CHANNEL = 'leasefence:wait-polling';

const waitPolling = channel(WAIT_POLLING_CHANNEL);

/** Publishes a `WaitPollingEvent` (nothing is built when nobody listens). */
export function publishWaitPolling(key: string, reason: WaitPollingEvent['reason'], pollMs: number): void {
  if (!waitPolling.hasSubscribers) return;
  const event: WaitPollingEvent = { key, reason, pollMs };
  waitPolling.publish(event);
}

const channels = Object.fromEntries(
  LEASE_OPERATIONS.map((operation) => [operation, tracingChannel<OperationEvent, OperationEvent>(`leasefence:${operation}`)]),
) as Readonly<Record<LeaseOperation, OperationTracingChannel>>;
const leaseLost = channel(LEASE_LOST_CHANNEL);

/** The tracing channel of `operation` (`leasefence:<operation>`). */
export function operationChannel(operation: LeaseOperation): OperationTracingChannel {
  return channels[operation];
}

/** Whether anyone listens to any event of `traced`. NOTE: each sub-channel, as `TracingChannel.hasSubscribers` is Node >= 20.13. */
export function isObserved(traced: OperationTracingChannel): boolean {
  return (
    traced.start.hasSubscribers ||
    traced.end.hasSubscribers ||
    traced.asyncStart.hasSubscribers ||
    traced.asyncEnd.hasSubscribers ||
    traced.error.hasSubscribers
  );
}

/**
 * Runs `run` with the events of one operation: `start`, `end` once `run` returned its promise, then
 * `error` (if it rejected), `asyncStart` and `asyncEnd` with `outcome` or `error` set. Call only when
 * `isObserved`: the caller skips building `event` otherwise.
 */
export async function traceOperation<T>(
  traced: OperationTracingChannel,
  event: OperationEvent,
  run: () => Promise<T>,
  summarize: (result: T) => OperationOutcome,
): Promise<T> {
  traced.start.publish(event);
  let pending: Promise<T>;
  try {
    pending = run();
  } catch (error) {
    event.error = error;
    traced.error.publish(event);
    throw error;
  } finally {
    traced.end.publish(event);
  }
  try {
    const result = await pending;
    event.outcome = summarize(result);
    traced.asyncStart.publish(event);
    traced.asyncEnd.publish(event);
    return result;
  } catch (error) {
    if (event.outcome === undefined) {
      event.error = error;
      traced.error.publish(event);
      traced.asyncStart.publish(event);
      traced.asyncEnd.publish(event);
    }
    throw error;
  }
}

/** Publishes that `withLease` lost `lease` (no-op when nobody listens). */
export function publishLeaseLost(
  lease: { readonly key: string; readonly token: bigint; readonly holder: string; readonly runId: string | null },
  error: LeaseError,
): void {
  if (!leaseLost.hasSubscribers) return;
  const refusal = (error as { refusal?: { reason?: string } }).refusal;
  const event: LeaseLostEvent = {
    key: lease.key,
    token: lease.token,
    holder: lease.holder,
    runId: lease.runId,
    code: error.code,
    reason: refusal?.reason ?? null,
    message: error.message,
  };
  leaseLost.publish(event);
}
