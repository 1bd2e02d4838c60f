/**
 * The imperative shell: validates input, calls the Store once per operation, and turns outcomes into lease
 * handles, typed results and (for the `...OrThrow` variants) errors. All decisions live in `fence/`.
 */
import { monotonicClock, type Clock } from './clock.js';
import {
  GateRefusedError,
  InvalidArgumentError,
  LeaseBusyError,
  LeaseLostError,
  RecoveryRequiredError,
} from './errors.js';
import type {
  CheckpointOutcome,
  ClaimHeld,
  ClaimRecoveryRequired,
  FencedWriteOutcome,
  GateOutcome,
  Inspection,
  RecoverOutcome,
  RecoveryAction,
  ReleaseOutcome,
  RenewOutcome,
  RevokeOutcome,
} from './fence/operations.js';
import type { CheckpointRecord, Ending, LeaseAttributes, StoreTime } from './fence/types.js';
import type { TokenGate } from './gate.js';
import { assertLease, Lease, parseLeaseJson, type Checkpoint, type LeaseJson } from './lease.js';
import { observeLeases } from './observed-leases.js';
import { newSecret } from './secret.js';
import type { Store, WriteContextOf } from './store.js';
import {
  assertKey,
  assertMaxBytes,
  assertName,
  assertRunId,
  assertText,
  assertTtl,
  DEFAULT_MAX_CHECKPOINT_BYTES,
  serializeCheckpoint,
  toAttributes,
} from './validate.js';
import { runWithLease, type WithLeaseOptions, type WithLeaseOutcome } from './with-lease.js';

export interface LeasesOptions {
  /** This worker's holder id, recorded on every grant it takes. */
  readonly holder: string;
  /**
   * Default time to live of a claim, in ms; `null`: grants never expire unless revoked.
   * @default 30_000
   */
  readonly ttlMs?: number | null;
  /**
   * Largest checkpoint accepted, in UTF-8 bytes of its JSON text. Checked before any I/O.
   * @default 65_536
   */
  readonly maxCheckpointBytes?: number;
  /**
   * The worker's monotonic clock, used only to measure round trips and compute local safe deadlines.
   * @default performance.now
   */
  readonly monotonicClock?: Clock;
}

export interface ClaimOptions {
  /** Time to live in ms, or `null` for no expiry. @default the `Leases` default */
  readonly ttlMs?: number | null;
  /** A run id for this attempt (the seeds' `runId`). @default null */
  readonly runId?: string | null;
  /** Attributes bound to the grant that fenced operations may require (e.g. a requested model version). */
  readonly attributes?: LeaseAttributes;
  /** Claim a lease revoked with `requireRecovery`, promising to resolve its checkpoint. @default false */
  readonly recovering?: boolean;
}

/** A granted claim: the lease handle plus what it inherited. */
export interface Granted {
  readonly ok: true;
  readonly lease: Lease;
  /** How the previous grant ended. */
  readonly previous: Ending | null;
  /** The previous holder's checkpoint, parsed, with its token. */
  readonly checkpoint: Checkpoint | null;
}

export type ClaimResult = Granted | ClaimHeld | ClaimRecoveryRequired;

export interface FenceOptions {
  /** Attributes the grant must have been bound with, checked atomically with the operation. */
  readonly attributes?: LeaseAttributes;
}

export interface FencedWriteOptions extends FenceOptions {
  /**
   * The lease's progress after this write (any JSON value), saved in the same atomic step as the write:
   * both apply or neither does, so a worker that crashes can never leave its data written and its
   * checkpoint behind (the next holder would repeat the step). Omitted: the checkpoint is left as it is.
   */
  readonly checkpoint?: unknown;
}

export interface ReleaseOptions {
  /** Leave a final checkpoint (any JSON), or `null` to clear the checkpoint. Omitted: keep it. */
  readonly checkpoint?: unknown;
}

export interface RevokeOptions {
  /** Why: shown to the revoked holder in its refusal and to the next claimer. */
  readonly reason: string;
  /** Who revoked. @default 'operator' */
  readonly by?: string;
  /** Refuse plain claims until a `recovering` claim resolves the kept checkpoint. @default false */
  readonly requireRecovery?: boolean;
  /** Revoke only if this token is the current grant. */
  readonly expectedToken?: bigint;
}

/** An inspection with the checkpoint parsed. */
export interface LeaseInspection extends Omit<Inspection, 'checkpoint'> {
  readonly checkpoint: Checkpoint | null;
}

/** The lease API, bound to one store and one holder. */
export interface Leases<S extends Store = Store> {
  readonly store: S;
  readonly holder: string;
  claim(key: string, options?: ClaimOptions): Promise<ClaimResult>;
  claimOrThrow(key: string, options?: ClaimOptions): Promise<Lease>;
  renew(lease: Lease, options?: { readonly ttlMs?: number | null }): Promise<RenewOutcome>;
  renewOrThrow(lease: Lease, options?: { readonly ttlMs?: number | null }): Promise<void>;
  checkpoint(lease: Lease, value: unknown, options?: FenceOptions): Promise<CheckpointOutcome>;
  checkpointOrThrow(lease: Lease, value: unknown, options?: FenceOptions): Promise<void>;
  fencedWrite<T>(lease: Lease, write: (context: WriteContextOf<S>) => T | Promise<T>, options?: FencedWriteOptions): Promise<FencedWriteOutcome<T>>;
  fencedWriteOrThrow<T>(lease: Lease, write: (context: WriteContextOf<S>) => T | Promise<T>, options?: FencedWriteOptions): Promise<T>;
  release(lease: Lease, options?: ReleaseOptions): Promise<ReleaseOutcome>;
  revoke(key: string, options: RevokeOptions): Promise<RevokeOutcome>;
  recover(lease: Lease, action: RecoveryAction): Promise<RecoverOutcome>;
  inspect(key: string): Promise<LeaseInspection>;
  /** Writes through a token gate with the lease's token; throws `GateRefusedError` on refusal via `gateWriteOrThrow`. */
  gateWrite<C, T>(gate: TokenGate<C>, resource: string, lease: Lease, write: (context: C) => T | Promise<T>): Promise<GateOutcome<T>>;
  gateWriteOrThrow<C, T>(gate: TokenGate<C>, resource: string, lease: Lease, write: (context: C) => T | Promise<T>): Promise<T>;
  /** Claims, renews in the background, runs `fn`, always releases. See `WithLeaseOptions`. */
  withLease<T>(key: string, fn: (lease: Lease, signal: AbortSignal) => Promise<T>, options?: WithLeaseOptions): Promise<WithLeaseOutcome<T>>;
  /** Rebuilds a handle from `lease.toJSON()` (for example in another process). */
  restore(json: LeaseJson): Lease;
}

/** The attributes of a claim that binds none (frozen, so one object serves every lease). */
const NO_ATTRIBUTES: LeaseAttributes = Object.freeze({});

function parseCheckpoint(record: CheckpointRecord | null): Checkpoint | null {
  return record === null ? null : { value: JSON.parse(record.json) as unknown, token: record.token, writtenAt: record.writtenAt };
}

/**
 * Creates the lease API for one holder on one store.
 *
 * ```ts
 * const leases = createLeases(store, { holder: 'exporter-1', ttlMs: 30_000 });
 * const claimed = await leases.claim('job:42', { runId: 'run-7' });
 * if (claimed.ok) {
 *   const outcome = await leases.fencedWrite(claimed.lease, (tx) => saveResult(tx));
 *   if (!outcome.ok) console.warn(describeRefusal(outcome)); // lease lost on job:42 (superseded: ...)
 *   await leases.release(claimed.lease);
 * }
 * ```
 */
export function createLeases<S extends Store>(store: S, options: LeasesOptions): Leases<S> {
  assertName('holder', options.holder);
  const defaultTtl = options.ttlMs === undefined ? 30_000 : options.ttlMs;
  assertTtl(defaultTtl);
  const maxCheckpointBytes = options.maxCheckpointBytes ?? DEFAULT_MAX_CHECKPOINT_BYTES;
  assertMaxBytes(maxCheckpointBytes);
  const monotonic = options.monotonicClock ?? monotonicClock;
  const { holder } = options;

  /** The local deadline: the grant lasts `expiresAt - now` of store time from no earlier than `sentAt`. */
  const deadlineFrom = (sentAt: number, expiresAt: StoreTime | null, now: StoreTime): number =>
    expiresAt === null ? Number.POSITIVE_INFINITY : sentAt + (expiresAt - now);

  const ttlOf = (ttlMs: number | null | undefined): number | null => {
    const ttl = ttlMs === undefined ? defaultTtl : ttlMs;
    assertTtl(ttl);
    return ttl;
  };

  const requireLease = (lease: unknown): Lease => {
    assertLease(lease, store.id);
    return lease;
  };

  const fenceOf = (lease: Lease, fenceOptions?: FenceOptions) =>
    lease.fence(fenceOptions?.attributes === undefined ? undefined : toAttributes(fenceOptions.attributes));

  // NOTE: one disposer for every handle (not a closure per claim): claim is the hot path.
  const dispose = (handle: Lease): Promise<ReleaseOutcome> => leases.release(handle);

  const leases: Leases<S> = {
    store,
    holder,

    async claim(key, claimOptions = {}) {
      assertKey(key);
      const ttlMs = ttlOf(claimOptions.ttlMs);
      const runId = claimOptions.runId ?? null;
      assertRunId(runId);
      const attributes = claimOptions.attributes === undefined ? NO_ATTRIBUTES : toAttributes(claimOptions.attributes);
      const secret = newSecret();
      const sentAt = monotonic();
      const outcome = await store.claim({ key, holder, runId, secret, ttlMs, attributes, recovering: claimOptions.recovering === true });
      if (!outcome.ok) return outcome;
      const inherited = parseCheckpoint(outcome.checkpoint);
      const lease = new Lease({
        storeId: store.id,
        key,
        token: outcome.token,
        secret,
        holder,
        runId,
        attributes,
        acquiredAt: outcome.acquiredAt,
        expiresAt: outcome.expiresAt,
        previous: outcome.previous,
        inherited,
        localDeadline: deadlineFrom(sentAt, outcome.expiresAt, outcome.now),
      });
      lease.disposer = dispose;
      return { ok: true, lease, previous: outcome.previous, checkpoint: inherited };
    },

    async claimOrThrow(key, claimOptions) {
      const result = await leases.claim(key, claimOptions);
      if (result.ok) return result.lease;
      throw result.reason === 'held' ? new LeaseBusyError(result) : new RecoveryRequiredError(result);
    },

    async renew(lease, renewOptions = {}) {
      requireLease(lease);
      const ttlMs = ttlOf(renewOptions.ttlMs);
      const sentAt = monotonic();
      const outcome = await store.renew({ fence: lease.fence(), ttlMs });
      if (outcome.ok) {
        lease.expiresAt = outcome.expiresAt;
        lease.localDeadline = deadlineFrom(sentAt, outcome.expiresAt, outcome.now);
      }
      return outcome;
    },

    async renewOrThrow(lease, renewOptions) {
      const outcome = await leases.renew(lease, renewOptions);
      if (!outcome.ok) throw new LeaseLostError(outcome);
    },

    async checkpoint(lease, value, fenceOptions) {
      requireLease(lease);
      const json = serializeCheckpoint(value, maxCheckpointBytes);
      return store.checkpoint({ fence: fenceOf(lease, fenceOptions), json });
    },

    async checkpointOrThrow(lease, value, fenceOptions) {
      const outcome = await leases.checkpoint(lease, value, fenceOptions);
      if (!outcome.ok) throw new LeaseLostError(outcome);
    },

    async fencedWrite(lease, write, fenceOptions) {
      requireLease(lease);
      if (typeof write !== 'function') throw new InvalidArgumentError('fencedWrite needs a write callback');
      const fence = fenceOf(lease, fenceOptions);
      const callback = write as (context: unknown) => never;
      if (fenceOptions === undefined || fenceOptions.checkpoint === undefined) return store.fencedWrite(fence, callback);
      return store.fencedWrite(fence, callback, { checkpointJson: serializeCheckpoint(fenceOptions.checkpoint, maxCheckpointBytes) });
    },

    async fencedWriteOrThrow(lease, write, fenceOptions) {
      const outcome = await leases.fencedWrite(lease, write, fenceOptions);
      if (!outcome.ok) throw new LeaseLostError(outcome);
      return outcome.value;
    },

    async release(lease, releaseOptions = {}) {
      requireLease(lease);
      const fence = lease.fence();
      if (!('checkpoint' in releaseOptions) || releaseOptions.checkpoint === undefined) return store.release({ fence });
      const checkpointJson = releaseOptions.checkpoint === null ? null : serializeCheckpoint(releaseOptions.checkpoint, maxCheckpointBytes);
      return store.release({ fence, checkpointJson });
    },

    async revoke(key, revokeOptions) {
      assertKey(key);
      if (typeof revokeOptions !== 'object' || revokeOptions === null) throw new InvalidArgumentError('revoke needs options with a reason');
      assertText('revoke reason', revokeOptions.reason);
      const by = revokeOptions.by ?? 'operator';
      assertName('revoked by', by);
      const expectedToken = revokeOptions.expectedToken ?? null;
      if (expectedToken !== null && (typeof expectedToken !== 'bigint' || expectedToken <= 0n)) {
        throw new InvalidArgumentError(`expectedToken must be a positive bigint, got ${String(expectedToken)}`);
      }
      return store.revoke({ key, reason: revokeOptions.reason, by, requireRecovery: revokeOptions.requireRecovery === true, expectedToken });
    },

    async recover(lease, action) {
      requireLease(lease);
      if (action !== 'resume' && action !== 'discard') throw new InvalidArgumentError(`recover action must be 'resume' or 'discard', got ${String(action)}`);
      return store.recover({ fence: lease.fence(), action });
    },

    async inspect(key) {
      assertKey(key);
      const inspection = await store.inspect(key);
      return { ...inspection, checkpoint: parseCheckpoint(inspection.checkpoint) };
    },

    async gateWrite(gate, resource, lease, write) {
      requireLease(lease);
      assertName('resource', resource);
      return gate.write(resource, { key: lease.key, token: lease.token }, write);
    },

    async gateWriteOrThrow(gate, resource, lease, write) {
      const outcome = await leases.gateWrite(gate, resource, lease, write);
      if (!outcome.ok) throw new GateRefusedError(outcome);
      return outcome.value;
    },

    withLease(key, fn, withOptions = {}) {
      return runWithLease(leases, monotonic, key, fn, withOptions);
    },

    restore(json) {
      const parsed = parseLeaseJson(json, store.id);
      const lease = new Lease({
        storeId: store.id,
        key: parsed.key,
        token: parsed.tokenValue,
        secret: parsed.secret,
        holder: parsed.holder,
        runId: parsed.runId,
        attributes: parsed.attributes,
        acquiredAt: null,
        expiresAt: parsed.expiresAt,
        previous: null,
        inherited: null,
        // NOTE: a restored handle has no round trip to measure from; its deadline is unknown until it renews.
        localDeadline: parsed.expiresAt === null ? Number.POSITIVE_INFINITY : Number.NEGATIVE_INFINITY,
      });
      lease.disposer = dispose;
      return lease;
    },
  };
  return observeLeases(leases);
}
