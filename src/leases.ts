/**
 * The imperative shell: validates input, calls the Store once per operation, and turns outcomes into lease
 * handles, typed results and (for the `...OrThrow` variants) errors. All decisions live in `fence/`.
 */
import { monotonicClock, type Clock } from './clock.js';
import { judgeCheck } from './check.js';
import { NOT_A_LOSS } from './events.js';
import {
  GateRefusedError,
  InvalidArgumentError,
  KeyHeldBackError,
  SemaphoreFullError,
  LeaseBusyError,
  LeaseLostError,
  RecoveryRequiredError,
  ReplayConflictError,
  RunAlreadyAcquiredError,
  StateMismatchError,
  KeyQueuedError,
  SubmissionReplayedError,
  TtlInsufficientError,
  WriteRefusedError,
} from './errors.js';
import type { FencedWriteOutcome, GateOutcome, ReleaseOutcome, StoreClaimOutcome } from './fence/operations.js';
import type { CheckpointRecord, Ending, Fence, LeaseAttributes, StoreTime } from './fence/types.js';
import { Lease, leaseFence, parseLeaseJson, type Checkpoint } from './lease.js';
import { permitOf, type SemaphoreFull } from './fence/permits.js';
import { checkedItems, checkedOnExpired, itemMethodsOf } from './items.js';
import { loggable } from './loggable.js';
import { observeLeases } from './observed-leases.js';
import { newSecret } from './secret.js';
import { ACQUIRE_PERMIT_OPTIONS, acquireMethodOf, permitListener } from './semaphores.js';
import { toSubmissionCommand } from './submission.js';
import { AppliedRelease, AppliedRenew, GrantedClaim } from './shell-results.js';
import { parseStoredCheckpoint } from './unreadable-checkpoint.js';
import type { WaitedRefusal } from './waiting/refusal.js';
import { queueTtlOf, readWaitOptions } from './waiting/wait-options.js';
import type { ClaimQueue } from './fence/queue.js';
import { waitForNext } from './waiting/waiting-claim-next.js';
import { createWaitingClaims } from './waiting/waiting-claims.js';
import type { Store } from './store.js';
import {
  assertHoldMs,
  assertKey,
  assertMaxBytes,
  assertName,
  assertRunId,
  assertSemaphore,
  assertText,
  assertToken,
  assertTtl,
  checkedNotBefore,
  copyOptions,
  DEFAULT_MAX_CHECKPOINT_BYTES,
  readOptions,
  readRequiredOptions,
  serializeCheckpoint,
  toAttributes,
  toKeyStateValues,
  describe,
  MAX_TTL_MS,
} from './validate.js';
import type {
  AcquirePermitOptions,
  AcquirePermitResult,
  ClaimNextResult,
  ClaimRefusal,
  ClaimResult,
  Leases,
  LeasesOptions,
  WaitedAcquirePermitResult,
  WaitedClaimResult,
  WaitedFull,
  WithLeaseOptions,
  RunningLease,
  WithPermitOptions,
  WithPermitOutcome,
} from './leases-types.js';
import type { WaitOptions } from './waiting/wait-options.js';
import { noticeRefusal, runAcquired, runWithLease } from './with-lease.js';

function parseCheckpoint(record: CheckpointRecord | null): Checkpoint | null {
  // NOTE: a damaged stored checkpoint reads as the unreadable marker, never as an error after a grant.
  return record === null ? null : { value: parseStoredCheckpoint(record.json), token: record.token, writtenAt: record.writtenAt };
}

/** The TTL a bare `renew` extends by, read once from the handle's public view (a throwing getter is a tampered handle). */
function leaseTtlOf(lease: Lease, key: string): unknown {
  try {
    return lease.ttlMs;
  } catch {
    throw new InvalidArgumentError(`lease ${key} was tampered with: its ttlMs could not be read`);
  }
}

/** The operations every `Store` implements (`list` and `watchFreed` are optional). */
const STORE_OPERATIONS = [
  'claim',
  'renew',
  'checkpoint',
  'fencedWrite',
  'release',
  'revoke',
  'recover',
  'setKeyState',
  'remove',
  'inspect',
] as const;

/** Checks that `store` is a `Store` (an object with an id and every operation) before any call reaches it. */
function assertStore(store: unknown): void {
  let missing: string | undefined;
  try {
    if (typeof store !== 'object' || store === null) throw new InvalidArgumentError(`createLeases needs a Store, got ${describe(store)}`);
    const { id } = store as Store;
    if (typeof id !== 'string' || id.length === 0) throw new InvalidArgumentError('createLeases needs a Store with a non-empty string id');
    missing = STORE_OPERATIONS.find((operation) => typeof (store as Record<string, unknown>)[operation] !== 'function');
  } catch (error) {
    if (error instanceof InvalidArgumentError) throw error;
    throw new InvalidArgumentError('createLeases needs a Store; this one could not be read (a getter or Proxy threw)');
  }
  if (missing !== undefined) throw new InvalidArgumentError(`createLeases needs a Store; this one has no ${missing} method`);
}

const OPEN_BRACE = 0x7b;

/** A claim of a key that is a semaphore's permit: refused before any I/O (permits are acquired, never claimed). */
function refuseClaimOfPermit(key: string): void {
  const permit = permitOf(key);
  if (permit !== null)
    throw new InvalidArgumentError(
      `${describe(key)} is permit ${permit.index} of semaphore ${describe(permit.semaphore)}: acquire it with acquirePermit (recovering: true takes a permit blocked for recovery)`,
    );
}

const CLAIM_OPTIONS = ['ttlMs', 'runId', 'attributes', 'recovering', 'expect', 'wait', 'jumpQueue'] as const;
const RELEASE_OPTIONS = ['checkpoint', 'holdMs'] as const;
// NOTE: `recovering` is read to refuse it: `claim` takes it, and claim-next never grants a key awaiting recovery.
const CLAIM_NEXT_OPTIONS = ['ttlMs', 'runId', 'attributes', 'expect', 'onExpired', 'wait', 'recovering'] as const;

/**
 * A claim's refusal as the shell answers it: the store's `held` for this holder's own live grant with this
 * (non-null) run id is `run-already-acquired`, decided here from what every store's `held` carries.
 */
function claimRefusal(outcome: Exclude<StoreClaimOutcome, { ok: true }>, holder: string, runId: string | null): ClaimRefusal {
  if (outcome.reason === 'held' && runId !== null && outcome.holder === holder && outcome.runId === runId) {
    return loggable({ ...outcome, reason: 'run-already-acquired', runId });
  }
  return loggable(outcome);
}

/** What a claim's command carries beyond the plain claim's fields, only when given. */
interface ClaimExtras {
  readonly expect?: Readonly<Record<string, string | null>>;
  readonly queue?: ClaimQueue;
  readonly jumpQueue?: boolean;
}

/** The extras of a claim (`undefined` when none, the hot path). */
function claimExtras(expect: Readonly<Record<string, string | null>> | undefined, jumpQueue: boolean): ClaimExtras | undefined {
  if (expect === undefined && !jumpQueue) return undefined;
  return { ...(expect === undefined ? {} : { expect }), ...(jumpQueue ? { jumpQueue } : {}) };
}

/** The error `claimOrThrow` throws for a refusal. */
function claimError(result: ClaimRefusal, waitedMs: number): Error {
  switch (result.reason) {
    case 'held':
      return new LeaseBusyError(result, waitedMs);
    case 'recovery-required':
      return new RecoveryRequiredError(result);
    case 'held-back':
      return new KeyHeldBackError(result);
    case 'state-mismatch':
      return new StateMismatchError(result);
    case 'queued':
      return new KeyQueuedError(result, waitedMs);
    default:
      return new RunAlreadyAcquiredError(result);
  }
}

/** The error `fencedWriteOrThrow` throws for a refusal. */
function fencedWriteError<T>(outcome: Exclude<FencedWriteOutcome<T>, { ok: true }>): Error {
  switch (outcome.reason) {
    case 'write-refused':
      return new WriteRefusedError(outcome);
    case 'replayed':
      return new SubmissionReplayedError(outcome);
    case 'replay-conflict':
      return new ReplayConflictError(outcome);
    default:
      return new LeaseLostError(outcome);
  }
}

/** The shell's answer to a release: an applied one built once, a refusal made log-safe. */
const releaseResult = (outcome: ReleaseOutcome): ReleaseOutcome => (outcome.ok ? new AppliedRelease(outcome) : loggable(outcome));

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
  assertStore(store);
  if (options === undefined) throw new InvalidArgumentError('createLeases needs options with a holder');
  const given = readOptions('createLeases options', options, ['holder', 'ttlMs', 'maxCheckpointBytes', 'monotonicClock']);
  const { holder } = given;
  assertName('holder', holder);
  const defaultTtl = given.ttlMs === undefined ? 30_000 : given.ttlMs;
  assertTtl(defaultTtl);
  const maxCheckpointBytes = given.maxCheckpointBytes ?? DEFAULT_MAX_CHECKPOINT_BYTES;
  assertMaxBytes(maxCheckpointBytes);
  const monotonic = (given.monotonicClock ?? monotonicClock) as Clock;
  if (typeof monotonic !== 'function') throw new InvalidArgumentError('monotonicClock must be a function returning milliseconds');

  /** The local deadline: the grant lasts `expiresAt - now` of store time from no earlier than `sentAt`. */
  const deadlineFrom = (sentAt: number, expiresAt: StoreTime | null, now: StoreTime): number =>
    expiresAt === null ? Number.POSITIVE_INFINITY : sentAt + (expiresAt - now);

  const ttlOf = (ttlMs: unknown): number | null => {
    const ttl = ttlMs === undefined ? defaultTtl : ttlMs;
    assertTtl(ttl);
    return ttl;
  };

  /** The handle's fence, every field checked before any I/O (a fresh copy the handle cannot change). */
  const requireLease = (lease: unknown): Fence => leaseFence(lease, store.id);

  /** The fence with the attributes an operation requires, from options read once and checked. */
  const fenceOf = (fence: Fence, attributes: unknown): Fence =>
    attributes === undefined ? fence : { ...fence, attributes: toAttributes(attributes) };

  // NOTE: one disposer for every handle (not a closure per claim): claim is the hot path.
  const dispose = (handle: Lease): Promise<ReleaseOutcome> => leases.release(handle);

  /** The handle of a grant `claimNext` answered for a request sent at `sentAt`. */
  const grantedLease = (
    key: string,
    outcome: { readonly token: bigint; readonly acquiredAt: StoreTime; readonly expiresAt: StoreTime | null; readonly now: StoreTime },
    request: {
      readonly secret: string;
      readonly runId: string | null;
      readonly attributes: LeaseAttributes;
      readonly ttlMs: number | null;
    },
    previous: Ending | null,
    inherited: Checkpoint | null,
    sentAt: number,
  ): Lease => {
    const lease = new Lease({
      storeId: store.id,
      key,
      token: outcome.token,
      secret: request.secret,
      holder,
      runId: request.runId,
      attributes: request.attributes,
      acquiredAt: outcome.acquiredAt,
      expiresAt: outcome.expiresAt,
      ttlMs: request.ttlMs,
      previous,
      inherited,
      localDeadline: deadlineFrom(sentAt, outcome.expiresAt, outcome.now),
      monotonic,
    });
    lease.disposer = dispose;
    return lease;
  };

  /** One claim of checked input, without waiting. */
  const claimOnce = async (
    key: string,
    ttlMs: number | null,
    runId: string | null,
    attributes: LeaseAttributes,
    recovering: boolean,
    extra: ClaimExtras | undefined,
  ): Promise<ClaimResult> => {
    const secret = newSecret();
    const sentAt = monotonic();
    const command = { key, holder, runId, secret, ttlMs, attributes, recovering };
    // NOTE: `expect`, `queue` and `jumpQueue` only when given: the plain claim's command keeps its shape (the hot path).
    const outcome = await store.claim(extra === undefined ? command : { ...command, ...extra });
    if (!outcome.ok) return claimRefusal(outcome, holder, runId);
    const inherited = parseCheckpoint(outcome.checkpoint);
    // NOTE: built here, not through `grantedLease` (claim-next's): the hot path allocates no request object.
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
      ttlMs,
      previous: outcome.previous,
      inherited,
      localDeadline: deadlineFrom(sentAt, outcome.expiresAt, outcome.now),
      monotonic,
    });
    lease.disposer = dispose;
    return new GrantedClaim(lease, outcome.previous, inherited);
  };

  const waitForClaim = createWaitingClaims({
    watchFreed:
      typeof store.watchFreed === 'function'
        ? (key, onFreed) => (store.watchFreed as NonNullable<Store['watchFreed']>)(key, onFreed)
        : null,
    monotonic,
    random: Math.random,
    release: (lease) => leases.release(lease),
    dequeue: (key, waiterIds) => void store.dequeue({ key, waiterIds }).catch(() => undefined),
  });

  const leases: Leases<S> = {
    store,
    holder,

    // NOTE: not `async`: a plain claim is one async step (`claimOnce`), not two; bad input still rejects.
    claim(key, claimOptions) {
      try {
        assertKey(key);
        // NOTE: a claim of a permit's key would pass its semaphore's limit; one character read on the hot path.
        if (key.charCodeAt(0) === OPEN_BRACE) refuseClaimOfPermit(key);
        const given = readOptions('claim options', claimOptions, CLAIM_OPTIONS);
        const ttlMs = ttlOf(given.ttlMs);
        const runId = given.runId ?? null;
        assertRunId(runId);
        const attributes = toAttributes(given.attributes);
        const { recovering } = given;
        if (recovering !== undefined && typeof recovering !== 'boolean') throw new InvalidArgumentError('recovering must be a boolean');
        const expect = given.expect === undefined ? undefined : toKeyStateValues('expect', given.expect);
        const { jumpQueue } = given;
        if (jumpQueue !== undefined && typeof jumpQueue !== 'boolean') throw new InvalidArgumentError('jumpQueue must be a boolean');
        const extra = claimExtras(expect, jumpQueue === true);
        // NOTE: the result type follows the options (a waited refusal carries `waitedMs`), which TS cannot
        // see through the checks above.
        if (given.wait === undefined) return claimOnce(key, ttlMs, runId, attributes, recovering === true, extra) as Promise<never>;
        const settings = readWaitOptions(given.wait);
        const attempt = (queue: ClaimQueue): Promise<ClaimResult> =>
          claimOnce(key, ttlMs, runId, attributes, recovering === true, { ...extra, queue });
        const queueTtlMs = queueTtlOf(settings, ttlMs);
        return waitForClaim(key, { settings, recovering: recovering === true, queueTtlMs, attempt }) as Promise<never>;
      } catch (error) {
        return Promise.reject(error as Error);
      }
    },

    async claimOrThrow(key, claimOptions) {
      const result: ClaimResult | WaitedClaimResult = await leases.claim(key, claimOptions);
      if (result.ok) return result.lease;
      const waitedMs = 'waitedMs' in result ? (result as WaitedRefusal).waitedMs : 0;
      throw claimError(result, waitedMs);
    },

    async renew(lease, renewOptions) {
      const fence = requireLease(lease);
      const given = readOptions('renew options', renewOptions, ['ttlMs']);
      // NOTE: a bare renew keeps the lease's own TTL (a `ttlMs: null` lease stays unexpiring), not the default.
      const ttlMs = ttlOf(given.ttlMs === undefined ? leaseTtlOf(lease, fence.key) : given.ttlMs);
      const sentAt = monotonic();
      const outcome = await store.renew({ fence, ttlMs });
      if (outcome.ok) {
        try {
          lease.expiresAt = outcome.expiresAt;
          lease.ttlMs = ttlMs;
          lease.localDeadline = deadlineFrom(sentAt, outcome.expiresAt, outcome.now);
        } catch {
          // NOTE: a handle its owner froze keeps the expiry it knew; the renewal itself holds in the store.
        }
        return new AppliedRenew(outcome);
      }
      noticeRefusal(lease, outcome);
      return loggable(outcome);
    },

    async renewOrThrow(lease, renewOptions) {
      const outcome = await leases.renew(lease, renewOptions);
      if (!outcome.ok) throw new LeaseLostError(outcome);
    },

    async checkpoint(lease, value, fenceOptions) {
      const given = readOptions('checkpoint options', fenceOptions, ['attributes']);
      const fence = fenceOf(requireLease(lease), given.attributes);
      const json = serializeCheckpoint(value, maxCheckpointBytes);
      const outcome = await store.checkpoint({ fence, json });
      if (!outcome.ok) noticeRefusal(lease, outcome);
      return loggable(outcome);
    },

    async checkpointOrThrow(lease, value, fenceOptions) {
      const outcome = await leases.checkpoint(lease, value, fenceOptions);
      if (!outcome.ok) throw new LeaseLostError(outcome);
    },

    async fencedWrite(lease, write, fenceOptions) {
      const leaseFenceOnly = requireLease(lease);
      if (typeof write !== 'function') throw new InvalidArgumentError('fencedWrite needs a write callback');
      const given = readOptions('fencedWrite options', fenceOptions, ['attributes', 'checkpoint', 'submission']);
      const fence = fenceOf(leaseFenceOnly, given.attributes);
      const callback = write as (context: unknown) => never;
      const checkpointJson = given.checkpoint === undefined ? undefined : serializeCheckpoint(given.checkpoint, maxCheckpointBytes);
      // NOTE: the digest (and every check of the submission) before any I/O.
      const submission =
        given.submission === undefined ? undefined : toSubmissionCommand(given.submission, leaseFenceOnly.runId, maxCheckpointBytes);
      const outcome =
        checkpointJson === undefined && submission === undefined
          ? await store.fencedWrite(fence, callback)
          : await store.fencedWrite(fence, callback, {
              ...(checkpointJson === undefined ? {} : { checkpointJson }),
              ...(submission === undefined ? {} : { submission }),
            });
      // NOTE: a fence's refusal inside a running withLease is its loss: the work's signal aborts at once. A
      // write that refused itself, or a submission's replay, leaves the grant as it was.
      if (!outcome.ok && !NOT_A_LOSS.has(outcome.reason)) noticeRefusal(lease, outcome as never);
      return loggable(outcome);
    },

    async fencedWriteOrThrow(lease, write, fenceOptions) {
      const outcome = await leases.fencedWrite(lease, write, fenceOptions);
      if (!outcome.ok) throw fencedWriteError(outcome);
      return outcome.value;
    },

    // NOTE: not `async`, like `claim`: one async step (the store's), and bad input still rejects.
    release(lease, releaseOptions) {
      try {
        const fence = requireLease(lease);
        const { checkpoint, holdMs } = readOptions('release options', releaseOptions, RELEASE_OPTIONS);
        if (holdMs !== undefined) assertHoldMs(holdMs);
        const hold = holdMs === undefined ? {} : { holdMs };
        if (checkpoint === undefined) return store.release(holdMs === undefined ? { fence } : { fence, ...hold }).then(releaseResult);
        const checkpointJson = checkpoint === null ? null : serializeCheckpoint(checkpoint, maxCheckpointBytes);
        return store.release({ fence, checkpointJson, ...hold }).then(releaseResult);
      } catch (error) {
        return Promise.reject(error as Error);
      }
    },

    async revoke(key, revokeOptions) {
      assertKey(key);
      if (revokeOptions === undefined) throw new InvalidArgumentError('revoke needs options with a reason');
      const given = readOptions('revoke options', revokeOptions, ['reason', 'by', 'requireRecovery', 'expectedToken']);
      const { reason, requireRecovery } = given;
      assertText('revoke reason', reason);
      const by = given.by ?? 'operator';
      assertName('revoked by', by);
      const expectedToken = given.expectedToken ?? null;
      if (expectedToken !== null) assertToken('expectedToken', expectedToken);
      if (requireRecovery !== undefined && typeof requireRecovery !== 'boolean')
        throw new InvalidArgumentError('requireRecovery must be a boolean');
      return loggable(await store.revoke({ key, reason, by, requireRecovery: requireRecovery === true, expectedToken }));
    },

    async check(lease, checkOptions) {
      const given = readOptions('check options', checkOptions, ['minTtlMs', 'attributes']);
      const fence = fenceOf(requireLease(lease), given.attributes);
      const minTtlMs = given.minTtlMs ?? 0;
      if (typeof minTtlMs !== 'number' || !Number.isInteger(minTtlMs) || minTtlMs < 0 || minTtlMs > MAX_TTL_MS)
        throw new InvalidArgumentError(
          `minTtlMs must be an integer number of milliseconds from 0 to ${MAX_TTL_MS}, got ${describe(minTtlMs)}`,
        );
      const sentAt = monotonic();
      const outcome = judgeCheck(await store.inspect(fence.key), fence, minTtlMs);
      // NOTE: a fence's refusal is a loss, as for any operation (the run's signal aborts); too little TTL is not.
      if (!outcome.ok && outcome.reason !== 'ttl-insufficient') noticeRefusal(lease, outcome);
      if (outcome.ok && outcome.expiresAt !== null) {
        // NOTE: a fresher safe deadline from this answer (both are safe bounds: keep the later one).
        const deadline = deadlineFrom(sentAt, outcome.expiresAt, outcome.now);
        try {
          if (deadline > lease.localDeadline) lease.localDeadline = deadline;
        } catch {
          // NOTE: a frozen handle keeps the deadline it knew.
        }
      }
      return loggable(outcome);
    },

    async checkOrThrow(lease, checkOptions) {
      const outcome = await leases.check(lease, checkOptions);
      if (outcome.ok) return;
      throw outcome.reason === 'ttl-insufficient' ? new TtlInsufficientError(outcome) : new LeaseLostError(outcome);
    },

    async setKeyState(key, values, stateOptions) {
      assertKey(key);
      const checked = toKeyStateValues('key state values', values);
      const given = readOptions('setKeyState options', stateOptions, ['holdMs', 'by']);
      const { holdMs } = given;
      if (holdMs !== undefined && holdMs !== null) assertHoldMs(holdMs);
      if (Object.keys(checked).length === 0 && holdMs === undefined)
        throw new InvalidArgumentError('setKeyState needs at least one value (or a holdMs)');
      const by = given.by ?? holder;
      assertName('setKeyState by', by);
      return loggable(await store.setKeyState({ key, values: checked, by, ...(holdMs === undefined ? {} : { holdMs }) }));
    },

    async remove(key, removeOptions) {
      assertKey(key);
      const given = readOptions('remove options', removeOptions, ['force', 'expectedToken']);
      const { force } = given;
      if (force !== undefined && typeof force !== 'boolean') throw new InvalidArgumentError('force must be a boolean');
      const expectedToken = given.expectedToken ?? null;
      if (expectedToken !== null) assertToken('expectedToken', expectedToken);
      return loggable(await store.remove({ key, force: force === true, expectedToken }));
    },

    async addItems(set, keys, addOptions) {
      const items = itemMethodsOf(store, 'addItems');
      const checked = checkedItems(set, keys);
      const { notBeforeMs } = readOptions('addItems options', addOptions, ['notBeforeMs']);
      const delay = checkedNotBefore(notBeforeMs);
      // NOTE: no `notBeforeMs` in the command when there is no delay: the store's default is 0.
      return loggable(await items.addItems(delay === 0 ? checked : { ...checked, notBeforeMs: delay }));
    },

    async removeItems(set, keys) {
      const items = itemMethodsOf(store, 'removeItems');
      return loggable(await items.removeItems(checkedItems(set, keys)));
    },

    // NOTE: not `async`, like `claim`: bad input rejects, and the result type follows the options.
    claimNext(set, claimOptions) {
      try {
        const items = itemMethodsOf(store, 'claimNext');
        assertName('set', set);
        const given = readOptions('claimNext options', claimOptions, CLAIM_NEXT_OPTIONS);
        if (given.recovering !== undefined)
          throw new InvalidArgumentError('claimNext takes no recovering option: claim the key itself with { recovering: true }');
        const ttlMs = ttlOf(given.ttlMs);
        const runId = given.runId ?? null;
        assertRunId(runId);
        const attributes = toAttributes(given.attributes);
        const expect = given.expect === undefined ? undefined : toKeyStateValues('expect', given.expect);
        const onExpired = checkedOnExpired(given.onExpired);
        const attempt = async (): Promise<ClaimNextResult> => {
          const secret = newSecret();
          const command = { set, holder, runId, secret, ttlMs, attributes, onExpired };
          const sentAt = monotonic();
          const outcome = await items.claimNext(expect === undefined ? command : { ...command, expect });
          if (!outcome.ok) return loggable(outcome);
          const inherited = parseCheckpoint(outcome.checkpoint);
          const lease = grantedLease(outcome.key, outcome, { secret, runId, attributes, ttlMs }, outcome.previous, inherited, sentAt);
          const { previous, abandoned, recoveryRequired, availableSince } = outcome;
          return loggable({ ok: true as const, lease, previous, checkpoint: inherited, set, availableSince, abandoned, recoveryRequired });
        };
        if (given.wait === undefined) return attempt() as Promise<never>;
        const settings = readWaitOptions(given.wait);
        return waitForNext(settings, { attempt, monotonic, random: Math.random }) as Promise<never>;
      } catch (error) {
        return Promise.reject(error as Error);
      }
    },

    // NOTE: not `async`, like `claim`: bad input rejects, and the result type follows the options.
    acquirePermit(semaphore, permitOptions) {
      try {
        const acquire = acquireMethodOf(store);
        const given = readRequiredOptions('acquirePermit options', permitOptions, ACQUIRE_PERMIT_OPTIONS);
        const { limit } = given;
        assertSemaphore(semaphore, limit);
        const ttlMs = ttlOf(given.ttlMs);
        const runId = given.runId ?? null;
        assertRunId(runId);
        const attributes = toAttributes(given.attributes);
        const { recovering } = given;
        if (recovering !== undefined && typeof recovering !== 'boolean') throw new InvalidArgumentError('recovering must be a boolean');
        const attempt = async (): Promise<AcquirePermitResult> => {
          const secret = newSecret();
          const command = { semaphore, limit: limit as number, holder, runId, secret, ttlMs, attributes, recovering: recovering === true };
          const sentAt = monotonic();
          const outcome = await acquire(command);
          if (!outcome.ok) return loggable(outcome);
          const inherited = parseCheckpoint(outcome.checkpoint);
          const lease = grantedLease(outcome.key, outcome, { secret, runId, attributes, ttlMs }, outcome.previous, inherited, sentAt);
          const { previous, index, live } = outcome;
          return loggable({ ok: true as const, lease, previous, checkpoint: inherited, semaphore, index, limit: outcome.limit, live });
        };
        if (given.wait === undefined) return attempt() as Promise<never>;
        const settings = readWaitOptions(given.wait);
        const listen = permitListener(store, semaphore, limit as number);
        return waitForNext(settings, { attempt, monotonic, random: Math.random, ...(listen === null ? {} : { listen }) }) as Promise<never>;
      } catch (error) {
        return Promise.reject(error as Error);
      }
    },

    async acquirePermitOrThrow(semaphore, permitOptions) {
      const result: AcquirePermitResult | WaitedAcquirePermitResult = await leases.acquirePermit(semaphore, permitOptions);
      if (result.ok) return result;
      throw new SemaphoreFullError(result);
    },

    async withPermit<T>(
      semaphore: string,
      fn: (lease: RunningLease, signal: AbortSignal) => Promise<T>,
      withOptions: WithPermitOptions,
    ): Promise<WithPermitOutcome<T>> {
      const options = copyOptions('withPermit options', withOptions) as unknown as WithPermitOptions;
      const permitOptions = Object.fromEntries(
        ACQUIRE_PERMIT_OPTIONS.flatMap((name) => (options[name] === undefined ? [] : [[name, options[name]]])),
      ) as unknown as AcquirePermitOptions;
      // NOTE: checked before the run (a bad limit is refused before any I/O, as every other bad input).
      assertSemaphore(semaphore, permitOptions.limit);
      const acquire = (wait: WaitOptions | undefined): Promise<AcquirePermitResult | WaitedAcquirePermitResult> =>
        leases.acquirePermit(semaphore, wait === undefined ? permitOptions : { ...permitOptions, wait });
      return runAcquired<T, SemaphoreFull | WaitedFull>(leases, monotonic, semaphore, fn, options, maxCheckpointBytes, acquire);
    },

    async recover(lease, action) {
      const fence = requireLease(lease);
      if (action !== 'resume' && action !== 'discard')
        throw new InvalidArgumentError(`recover action must be 'resume' or 'discard', got ${describe(action)}`);
      return loggable(await store.recover({ fence, action }));
    },

    async inspect(key) {
      assertKey(key);
      const inspection = await store.inspect(key);
      return loggable({ ...inspection, checkpoint: parseCheckpoint(inspection.checkpoint) });
    },

    async gateWrite(gate, resource, lease, write) {
      const fence = requireLease(lease);
      assertName('resource', resource);
      if (typeof write !== 'function') throw new InvalidArgumentError('gateWrite needs a write callback');
      let gateWriteMethod: unknown;
      try {
        gateWriteMethod = typeof gate === 'object' && gate !== null ? gate.write : undefined;
      } catch {
        gateWriteMethod = undefined;
      }
      if (typeof gateWriteMethod !== 'function')
        throw new InvalidArgumentError('gateWrite needs a TokenGate (an object with a write method)');
      // NOTE: the full fence (with the secret): a gate in the lease store's backend checks the grant itself.
      const gateWriteOf = gateWriteMethod as (resource: string, lease: Fence, write: typeof callback) => Promise<GateOutcome<never>>;
      const callback = write as (context: unknown) => never;
      // NOTE: a frozen copy: a gate is the application's code, and the handle's own fence must stay as it is.
      return loggable(await gateWriteOf.call(gate, resource, Object.freeze({ ...fence }), callback));
    },

    async gateWriteOrThrow(gate, resource, lease, write) {
      const outcome = await leases.gateWrite(gate, resource, lease, write);
      if (outcome.ok) return outcome.value;
      if ('resource' in outcome) throw new GateRefusedError(outcome);
      throw new LeaseLostError(outcome);
    },

    async withLease(key, fn, withOptions) {
      return runWithLease(
        leases,
        monotonic,
        key,
        fn,
        copyOptions('withLease options', withOptions) as WithLeaseOptions,
        maxCheckpointBytes,
      );
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
        // NOTE: the JSON carries no TTL: an unexpiring grant stays unexpiring, an expiring one renews by the
        // default TTL (or the library's 30 s when this instance's default is "no expiry").
        ttlMs: parsed.expiresAt === null ? null : (defaultTtl ?? 30_000),
        previous: null,
        inherited: null,
        // NOTE: a restored handle has no round trip to measure from; its deadline is unknown until it renews.
        localDeadline: parsed.expiresAt === null ? Number.POSITIVE_INFINITY : Number.NEGATIVE_INFINITY,
        monotonic,
      });
      lease.disposer = dispose;
      return lease;
    },
  };
  return observeLeases(leases);
}
