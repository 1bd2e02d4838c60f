/**
 * Publishes the events of `events.ts` around a `Leases` object's operations, in place: each operation
 * checks whether anyone listens and otherwise calls the original directly. The summaries keep what
 * metrics and logs need and nothing secret (a lease handle never leaves here).
 */
import { isObserved, operationChannel, traceOperation, type LeaseOperation, type OperationEvent, type OperationOutcome } from './events.js';
import type { CheckTtlInsufficient } from './refusals.js';
import type { ReplayConflict, SubmissionReplayed, WriteRefusal } from './fence/operations.js';
import type { Ending, FenceRefusal, StoreTime } from './fence/types.js';
import type { Lease } from './lease.js';
import type { Leases } from './leases-types.js';

type Refusal = FenceRefusal | WriteRefusal | SubmissionReplayed | ReplayConflict | CheckTtlInsufficient;

/** The key's token a refusal names: the fence's finding, the write's grant, or the recorded submission's. */
function refusedToken(refusal: Refusal): bigint | null {
  switch (refusal.reason) {
    case 'write-refused':
    case 'ttl-insufficient':
      return refusal.token;
    case 'replayed':
      return refusal.submission.token;
    case 'replay-conflict':
      return refusal.found.token;
    default:
      return refusal.found.token;
  }
}

/** A refusal as an outcome. */
const refused = (refusal: Refusal): OperationOutcome => ({
  ok: false,
  result: 'refused',
  reason: refusal.reason,
  token: refusedToken(refusal),
  now: refusal.now,
});

/** `applied` or `refused`, for operations that return `{ ok: true, now }` or a fence refusal. */
const appliedOrRefused =
  (token: bigint) =>
  (outcome: { readonly ok: true; readonly now: StoreTime } | Refusal): OperationOutcome =>
    outcome.ok ? { ok: true, result: 'applied', token, now: outcome.now } : refused(outcome);

/** The non-secret fields of a lease argument (which may be anything: the operation validates it). */
function leaseEvent(operation: LeaseOperation, lease: unknown): OperationEvent {
  const fields = (typeof lease === 'object' && lease !== null ? lease : {}) as {
    key?: unknown;
    token?: unknown;
    holder?: unknown;
    runId?: unknown;
  };
  return {
    operation,
    key: typeof fields.key === 'string' ? fields.key : '',
    token: typeof fields.token === 'bigint' ? fields.token : null,
    holder: typeof fields.holder === 'string' ? fields.holder : '',
    runId: typeof fields.runId === 'string' ? fields.runId : null,
  };
}

const tokenOf = (event: OperationEvent): bigint => event.token ?? 0n;

/** A grant of a key a set or a semaphore chose (claim-next, a permit): `item` names the key granted. */
function grantOfKey(result: { readonly lease: Lease; readonly previous: Ending | null }): OperationOutcome {
  const { lease, previous } = result;
  const acquiredAt = lease.acquiredAt ?? 0;
  return {
    ok: true,
    result: 'granted',
    item: lease.key,
    token: lease.token,
    acquiredAt,
    expiresAt: lease.expiresAt,
    previous: previous === null ? null : { kind: previous.kind, token: previous.token, at: previous.at },
    now: acquiredAt,
  };
}

/** Wraps the operations of `leases` (in place) so that they publish their events; returns it. */
export function observeLeases<L extends Leases>(leases: L): L {
  const {
    claim,
    renew,
    checkpoint,
    fencedWrite,
    check,
    release,
    revoke,
    recover,
    setKeyState,
    remove,
    addItems,
    removeItems,
    claimNext,
    acquirePermit,
  } = leases;
  const channel = {
    claim: operationChannel('claim'),
    renew: operationChannel('renew'),
    checkpoint: operationChannel('checkpoint'),
    fencedWrite: operationChannel('fencedWrite'),
    release: operationChannel('release'),
    revoke: operationChannel('revoke'),
    recover: operationChannel('recover'),
    check: operationChannel('check'),
    setKeyState: operationChannel('setKeyState'),
    remove: operationChannel('remove'),
    addItems: operationChannel('addItems'),
    removeItems: operationChannel('removeItems'),
    claimNext: operationChannel('claimNext'),
    acquirePermit: operationChannel('acquirePermit'),
  };
  const { holder } = leases;

  leases.claim = (key, options) => {
    if (!isObserved(channel.claim)) return claim(key, options);
    const runId = typeof options?.runId === 'string' ? options.runId : null;
    const event: OperationEvent = { operation: 'claim', key: typeof key === 'string' ? key : '', token: null, holder, runId };
    return traceOperation(
      channel.claim,
      event,
      () => claim(key, options),
      (result): OperationOutcome => {
        if (!result.ok) {
          const heldBy = result.reason === 'held' || result.reason === 'run-already-acquired' ? result.holder : null;
          const token = result.reason === 'state-mismatch' ? null : result.token;
          return { ok: false, result: result.reason, reason: result.reason, token, holder: heldBy, now: result.now };
        }
        const { lease, previous } = result;
        const acquiredAt = lease.acquiredAt ?? 0;
        return {
          ok: true,
          result: 'granted',
          token: lease.token,
          acquiredAt,
          expiresAt: lease.expiresAt,
          previous: previous === null ? null : { kind: previous.kind, token: previous.token, at: previous.at },
          now: acquiredAt,
        };
      },
    );
  };

  leases.renew = (lease, options) => {
    if (!isObserved(channel.renew)) return renew(lease, options);
    const event = leaseEvent('renew', lease);
    const before = (lease as { expiresAt?: unknown } | null)?.expiresAt;
    return traceOperation(
      channel.renew,
      event,
      () => renew(lease, options),
      (outcome): OperationOutcome => {
        if (!outcome.ok) return refused(outcome);
        const marginMs = typeof before === 'number' ? before - outcome.now : null;
        return { ok: true, result: 'renewed', token: outcome.token, expiresAt: outcome.expiresAt, marginMs, now: outcome.now };
      },
    );
  };

  leases.checkpoint = (lease, value, options) => {
    if (!isObserved(channel.checkpoint)) return checkpoint(lease, value, options);
    const event = leaseEvent('checkpoint', lease);
    return traceOperation(channel.checkpoint, event, () => checkpoint(lease, value, options), appliedOrRefused(tokenOf(event)));
  };

  leases.fencedWrite = (lease, write, options) => {
    if (!isObserved(channel.fencedWrite)) return fencedWrite(lease, write, options);
    const event = leaseEvent('fencedWrite', lease);
    // NOTE: the summary drops the write's value: it is the application's data, not an observer's.
    return traceOperation(channel.fencedWrite, event, () => fencedWrite(lease, write, options), appliedOrRefused(tokenOf(event)));
  };

  leases.release = (lease, options) => {
    if (!isObserved(channel.release)) return release(lease, options);
    const event = leaseEvent('release', lease);
    return traceOperation(channel.release, event, () => release(lease, options), appliedOrRefused(tokenOf(event)));
  };

  leases.revoke = (key, options) => {
    if (!isObserved(channel.revoke)) return revoke(key, options);
    const by = (options as { by?: unknown } | null)?.by;
    const event: OperationEvent = {
      operation: 'revoke',
      key: typeof key === 'string' ? key : '',
      token: null,
      holder: typeof by === 'string' ? by : 'operator',
      runId: null,
    };
    return traceOperation(
      channel.revoke,
      event,
      () => revoke(key, options),
      (outcome): OperationOutcome =>
        outcome.ok
          ? { ok: true, result: 'applied', token: outcome.token, now: outcome.now }
          : { ok: false, result: 'refused', reason: outcome.reason, token: outcome.token, now: outcome.now },
    );
  };

  leases.check = (lease, options) => {
    if (!isObserved(channel.check)) return check(lease, options);
    const event = leaseEvent('check', lease);
    return traceOperation(
      channel.check,
      event,
      () => check(lease, options),
      (outcome): OperationOutcome =>
        outcome.ok ? { ok: true, result: 'applied', token: outcome.token, now: outcome.now } : refused(outcome),
    );
  };

  /** An operator-style event: no lease, `holder` is who the change is recorded `by`. */
  const keyEvent = (operation: LeaseOperation, key: unknown, by: unknown): OperationEvent => ({
    operation,
    key: typeof key === 'string' ? key : '',
    token: null,
    holder: typeof by === 'string' ? by : holder,
    runId: null,
  });

  leases.setKeyState = (key, values, options) => {
    if (!isObserved(channel.setKeyState)) return setKeyState(key, values, options);
    const event = keyEvent('setKeyState', key, (options as { by?: unknown } | null | undefined)?.by);
    // NOTE: `token`: the grant the change ended (0 when it ended none); the values stay the application's.
    return traceOperation(
      channel.setKeyState,
      event,
      () => setKeyState(key, values, options),
      (outcome): OperationOutcome => ({ ok: true, result: 'applied', token: outcome.ended?.token ?? 0n, now: outcome.now }),
    );
  };

  leases.remove = (key, options) => {
    if (!isObserved(channel.remove)) return remove(key, options);
    const event = keyEvent('remove', key, 'operator');
    return traceOperation(
      channel.remove,
      event,
      () => remove(key, options),
      (outcome): OperationOutcome =>
        outcome.ok
          ? { ok: true, result: 'applied', token: outcome.token, now: outcome.now }
          : { ok: false, result: 'refused', reason: outcome.reason, token: outcome.token, now: outcome.now },
    );
  };

  /** A set's (or a semaphore's) event: `key` is the set's (or the semaphore's) name. */
  const setEvent = (operation: LeaseOperation, set: unknown, runId: unknown): OperationEvent => ({
    operation,
    key: typeof set === 'string' ? set : '',
    token: null,
    holder,
    runId: typeof runId === 'string' ? runId : null,
  });

  leases.addItems = (set, keys, options) => {
    if (!isObserved(channel.addItems)) return addItems(set, keys, options);
    return traceOperation(
      channel.addItems,
      setEvent('addItems', set, null),
      () => addItems(set, keys, options),
      (outcome): OperationOutcome =>
        outcome.ok
          ? { ok: true, result: 'applied', token: 0n, now: outcome.now }
          : { ok: false, result: 'refused', reason: outcome.reason, token: null, now: outcome.now },
    );
  };

  leases.removeItems = (set, keys) => {
    if (!isObserved(channel.removeItems)) return removeItems(set, keys);
    return traceOperation(
      channel.removeItems,
      setEvent('removeItems', set, null),
      () => removeItems(set, keys),
      (outcome): OperationOutcome => ({ ok: true, result: 'applied', token: 0n, now: outcome.now }),
    );
  };

  leases.claimNext = (set, options) => {
    if (!isObserved(channel.claimNext)) return claimNext(set, options);
    return traceOperation(
      channel.claimNext,
      setEvent('claimNext', set, (options as { runId?: unknown } | null | undefined)?.runId),
      () => claimNext(set, options),
      (result): OperationOutcome => {
        if (!result.ok) return { ok: false, result: 'idle', reason: 'idle', token: null, nextAt: result.nextAt, now: result.now };
        return grantOfKey(result);
      },
    );
  };

  leases.acquirePermit = (semaphore, options) => {
    if (!isObserved(channel.acquirePermit)) return acquirePermit(semaphore, options);
    return traceOperation(
      channel.acquirePermit,
      setEvent('acquirePermit', semaphore, (options as { runId?: unknown } | null | undefined)?.runId),
      () => acquirePermit(semaphore, options),
      (result): OperationOutcome => {
        if (!result.ok)
          return {
            ok: false,
            result: 'full',
            reason: 'full',
            token: null,
            live: result.live.length,
            nextAt: result.nextAt,
            now: result.now,
          };
        return grantOfKey(result);
      },
    );
  };

  leases.recover = (lease, action) => {
    if (!isObserved(channel.recover)) return recover(lease, action);
    const event = leaseEvent('recover', lease);
    return traceOperation(channel.recover, event, () => recover(lease, action), appliedOrRefused(tokenOf(event)));
  };

  return leases;
}
