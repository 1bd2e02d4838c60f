/**
 * The lease state machine as pure functions of (record, command, now). Each returns the next record (or the
 * same one, when nothing changes) and the outcome the store reports. No I/O, no clock, no randomness: the
 * secret comes in the command and the time comes in `now`.
 */
import type {
  CheckpointCommand,
  CheckpointOutcome,
  ClaimCommand,
  DequeueCommand,
  DequeueOutcome,
  GrantView,
  StoreClaimOutcome,
  StoreInspection,
  RecoverCommand,
  RecoverOutcome,
  ReleaseCommand,
  ReleaseOutcome,
  RenewCommand,
  RenewOutcome,
  RemoveCommand,
  RemoveOutcome,
  ReplayConflict,
  RevokeCommand,
  RevokeOutcome,
  SetKeyStateCommand,
  SetKeyStateOutcome,
  SubmissionCommand,
  SubmissionReplayed,
} from './operations.js';
import { enqueue, liveWaiters, positionOf } from './queue.js';
import { mintToken } from './token.js';
import type { Ending, Fence, FenceRefusal, GrantState, KeyState, LeaseRecord, QueuedWaiter, StoreTime, SubmissionRecord } from './types.js';
import { stateValue, SUBMISSION_RETENTION } from './types.js';
import { checkFence, expiredEnding, isLive } from './verdict.js';

/** The result of a transition: the record to store (`unchanged` when nothing must be written) and the outcome. */
export interface Transition<O> {
  readonly record: LeaseRecord | null;
  readonly changed: boolean;
  readonly outcome: O;
}

const unchanged = <O>(record: LeaseRecord | null, outcome: O): Transition<O> => ({ record, changed: false, outcome });
const changedTo = <O>(record: LeaseRecord, outcome: O): Transition<O> => ({ record, changed: true, outcome });
/** The record is deleted (`remove`): `record: null, changed: true`. */
const deleted = <O>(outcome: O): Transition<O> => ({ record: null, changed: true, outcome });

const NO_STATE: KeyState = Object.freeze({});
const NO_SUBMISSIONS: readonly SubmissionRecord[] = Object.freeze([]);
const NO_WAITERS: readonly QueuedWaiter[] = Object.freeze([]);

/** A key's record before its first grant or state: token 0 (no grant was ever made), nothing kept. */
export function emptyRecord(key: string): LeaseRecord {
  return {
    key,
    token: 0n,
    grant: null,
    ending: null,
    checkpoint: null,
    recoveryRequired: false,
    state: NO_STATE,
    heldUntil: null,
    submissions: NO_SUBMISSIONS,
    waiters: NO_WAITERS,
  };
}

/** Names in code-unit order (not locale order): every store sorts them the same way. */
const byCodeUnit = (a: string, b: string): number => (a < b ? -1 : a > b ? 1 : 0);

/** The first value (by name) of `expect` the state does not have, or `null` when every one matches. */
function stateMismatch(state: KeyState, expect: Readonly<Record<string, string | null>>) {
  for (const name of Object.keys(expect).sort(byCodeUnit)) {
    const expected = stateValue(expect, name);
    const found = stateValue(state, name);
    if (expected !== found) return { name, expected, found };
  }
  return null;
}

function expiresAtFrom(now: StoreTime, ttlMs: number | null): StoreTime | null {
  return ttlMs === null ? null : now + ttlMs;
}

/**
 * Claim: granted when the key is new, released, revoked or expired and nobody waits before it; refused while a
 * live grant holds it, while it is held back, while a revoke's required recovery is pending and the claimer did
 * not say `recovering`, or while other waiting claims are first in its queue (`queued`, see `queue.ts`).
 * A waiting claim (`command.queue`) queues or renews its waiters whenever it is refused `held`, `held-back` or
 * `queued`; when granted, its claimant leaves the queue and the other waiters it names are queued (or renewed).
 * `tokenFloor` lets a store that may lose its data (Redis without persistence) keep tokens increasing.
 */
export function claim(record: LeaseRecord | null, command: ClaimCommand, now: StoreTime, tokenFloor = 0n): Transition<StoreClaimOutcome> {
  const { key } = command;
  if (command.expect !== undefined) {
    const field = stateMismatch(record?.state ?? NO_STATE, command.expect);
    if (field !== null) return unchanged(record, { ok: false, reason: 'state-mismatch', key, field, now });
  }
  const grant = record?.grant ?? null;
  const live = liveWaiters(record?.waiters ?? NO_WAITERS, now);
  const queue = command.queue;
  // NOTE: a waiting claim's refusal queues (or renews) its waiters; any other refusal writes nothing.
  const refused = (outcome: StoreClaimOutcome, waiters: readonly QueuedWaiter[] = live): Transition<StoreClaimOutcome> =>
    queue === undefined ? unchanged(record, outcome) : changedTo({ ...(record ?? emptyRecord(key)), waiters }, outcome);
  const queued = queue === undefined ? live : enqueue(live, queue, command.holder, now);
  if (record !== null && grant !== null && isLive(grant, now)) {
    const { token, holder, runId, acquiredAt, expiresAt } = grant;
    if (grant.secret === command.secret) {
      // NOTE: the same claim delivered twice (a reply lost, the request re-sent): report the grant it made.
      return unchanged(record, {
        ok: true,
        key,
        token,
        acquiredAt,
        expiresAt,
        previous: record.ending,
        checkpoint: record.checkpoint,
        now,
      });
    }
    return refused({ ok: false, reason: 'held', key, token, holder, runId, acquiredAt, expiresAt, now }, queued);
  }
  const previous = grant !== null ? expiredEnding(grant) : (record?.ending ?? null);
  const checkpoint = record?.checkpoint ?? null;
  const heldUntil = record?.heldUntil ?? null;
  if (record !== null && heldUntil !== null && now < heldUntil) {
    return refused({ ok: false, reason: 'held-back', key, token: record.token, heldUntil, now }, queued);
  }
  const recoveryRequired = record?.recoveryRequired ?? false;
  if (recoveryRequired && !command.recovering) {
    return unchanged(record, { ok: false, reason: 'recovery-required', key, token: record?.token ?? 0n, previous, checkpoint, now });
  }
  const claimant = queue?.waiterIds[0];
  const first = queued[0];
  // NOTE: a recovering claim of a key awaiting recovery is never queued: the plain waiters cannot take it anyway.
  const ahead = first !== undefined && first.waiterId !== claimant && command.jumpQueue !== true && !recoveryRequired;
  if (ahead) {
    const { holder, arrivedAt, expiresAt } = first;
    const position = positionOf(queued, claimant);
    const token = record?.token ?? 0n;
    return refused(
      { ok: false, reason: 'queued', key, token, waiting: queued.length, position, first: { holder, arrivedAt, expiresAt }, now },
      queued,
    );
  }
  const token = mintToken(record?.token ?? 0n, tokenFloor);
  const expiresAt = expiresAtFrom(now, command.ttlMs);
  const next: LeaseRecord = {
    key,
    token,
    grant: {
      token,
      holder: command.holder,
      runId: command.runId,
      secret: command.secret,
      acquiredAt: now,
      expiresAt,
      attributes: command.attributes,
    },
    ending: previous,
    checkpoint,
    recoveryRequired,
    state: record?.state ?? NO_STATE,
    // NOTE: a hold that has passed is cleared by the grant that follows it.
    heldUntil: null,
    submissions: record?.submissions ?? NO_SUBMISSIONS,
    // NOTE: the granted waiter leaves the queue, expired entries are dropped with it, and the other waiters the
    // claim names (its process's, arrived while it was in flight) take their places now, in arrival order.
    waiters: claimant === undefined ? live : queued.filter((waiter) => waiter.waiterId !== claimant),
  };
  return changedTo(next, { ok: true, key, token, acquiredAt: now, expiresAt, previous, checkpoint, now });
}

/**
 * Dequeue: waiters that stopped waiting leave the key's queue at once (their entries would expire anyway).
 * `freed` when the first live waiter left while the key is claimable, so the next one is told to try.
 */
export function dequeue(record: LeaseRecord | null, command: DequeueCommand, now: StoreTime): Transition<DequeueOutcome> {
  const { key } = command;
  const live = liveWaiters(record?.waiters ?? NO_WAITERS, now);
  const leaving = new Set(command.waiterIds);
  const kept = live.filter((waiter) => !leaving.has(waiter.waiterId));
  const removed = live.length - kept.length;
  if (record === null || removed === 0) return unchanged(record, { ok: true, key, removed: 0, freed: false, now });
  const firstLeft = live[0] !== undefined && leaving.has(live[0].waiterId);
  const grant = record.grant;
  const claimable = (grant === null || !isLive(grant, now)) && (record.heldUntil === null || now >= record.heldUntil);
  return changedTo({ ...record, waiters: kept }, { ok: true, key, removed, freed: firstLeft && claimable && kept.length > 0, now });
}

/** Renew: only the current, live grant may extend itself; never resurrects an ended or superseded grant. */
export function renew(record: LeaseRecord | null, command: RenewCommand, now: StoreTime): Transition<RenewOutcome> {
  const verdict = checkFence(record, command.fence, now);
  if (!verdict.ok || record === null || record.grant === null) return unchanged(record, verdict as RenewOutcome);
  const expiresAt = expiresAtFrom(now, command.ttlMs);
  const next: LeaseRecord = { ...record, grant: { ...record.grant, expiresAt } };
  return changedTo(next, { ok: true, key: record.key, token: record.token, expiresAt, now });
}

/** Checkpoint: a fenced write of the grant's own progress. Writing one resolves a pending recovery. */
export function checkpoint(record: LeaseRecord | null, command: CheckpointCommand, now: StoreTime): Transition<CheckpointOutcome> {
  const verdict = checkFence(record, command.fence, now);
  if (!verdict.ok || record === null) return unchanged(record, verdict as CheckpointOutcome);
  const saved = { json: command.json, token: command.fence.token, writtenAt: now };
  return changedTo({ ...record, checkpoint: saved, recoveryRequired: false }, { ok: true, checkpoint: saved, now });
}

/**
 * Release: ends the current live grant; releasing with a checkpoint decision (set or clear) resolves a
 * pending recovery. Idempotent for the same grant (also once a newer grant holds the key,
 * as long as the last ending is this grant's release); a stale or expired grant changes nothing (an expired
 * grant's fate is recorded as `expired` by whoever takes over).
 */
export function release(record: LeaseRecord | null, command: ReleaseCommand, now: StoreTime): Transition<ReleaseOutcome> {
  const { fence } = command;
  const verdict = checkFence(record, fence, now);
  if (!verdict.ok) {
    // NOTE: a release delivered again (its first reply lost) may arrive after a newer grant took the key;
    // the ending still names this grant as released, and saying so is the truth the caller needs.
    const ending = record?.ending;
    const repeated = ending?.kind === 'released' && ending.token === fence.token;
    if (repeated) return unchanged(record, { ok: true, key: fence.key, token: fence.token, alreadyReleased: true, now });
    return unchanged(record, verdict);
  }
  if (record === null || record.grant === null) return unchanged(record, verdict as ReleaseOutcome);
  const { grant } = record;
  const checkpointAfter =
    command.checkpointJson === undefined
      ? record.checkpoint
      : command.checkpointJson === null
        ? null
        : { json: command.checkpointJson, token: grant.token, writtenAt: now };
  const next: LeaseRecord = {
    ...record,
    grant: null,
    ending: { kind: 'released', token: grant.token, holder: grant.holder, runId: grant.runId, at: now, reason: null, by: null },
    checkpoint: checkpointAfter,
    // NOTE: an explicit checkpoint decision (set or clear) resolves a pending recovery, as checkpoint and
    // recover do; keeping the inherited checkpoint untouched leaves the recovery pending.
    recoveryRequired: command.checkpointJson === undefined ? record.recoveryRequired : false,
    heldUntil: command.holdMs === undefined ? record.heldUntil : now + command.holdMs,
  };
  return changedTo(next, { ok: true, key: record.key, token: grant.token, alreadyReleased: false, now });
}

/**
 * Revoke: an operator's force-release of the current grant, live or expired. Moves the token on (burning
 * one), so the revoked holder is fenced at once; keeps the checkpoint for whoever recovers.
 */
export function revoke(record: LeaseRecord | null, command: RevokeCommand, now: StoreTime): Transition<RevokeOutcome> {
  const { key } = command;
  if (record === null) return unchanged(record, { ok: false, reason: 'missing', key, token: null, now });
  const { grant } = record;
  if (grant === null) return unchanged(record, { ok: false, reason: 'not-held', key, token: record.token, now });
  if (command.expectedToken !== null && command.expectedToken !== grant.token) {
    return unchanged(record, { ok: false, reason: 'superseded', key, token: record.token, now });
  }
  const revoked = {
    kind: 'revoked' as const,
    token: grant.token,
    holder: grant.holder,
    runId: grant.runId,
    at: now,
    reason: command.reason,
    by: command.by,
  };
  const token = record.token + 1n;
  const recoveryRequired = command.requireRecovery && record.checkpoint !== null;
  const next: LeaseRecord = { ...record, token, grant: null, ending: revoked, recoveryRequired };
  return changedTo(next, { ok: true, key, revoked, token, recoveryRequired, now });
}

/** Recover: the current grant resolves the inherited checkpoint (resume = adopt under its token, or discard). */
export function recover(record: LeaseRecord | null, command: RecoverCommand, now: StoreTime): Transition<RecoverOutcome> {
  const verdict = checkFence(record, command.fence, now);
  if (!verdict.ok || record === null) return unchanged(record, verdict as RecoverOutcome);
  const checkpointAfter =
    command.action === 'discard' || record.checkpoint === null
      ? null
      : { ...record.checkpoint, token: command.fence.token, writtenAt: now };
  const next: LeaseRecord = { ...record, checkpoint: checkpointAfter, recoveryRequired: false };
  return changedTo(next, { ok: true, key: record.key, checkpoint: checkpointAfter, now });
}

/**
 * Set key state: values that belong to the key (and a hold), set by a writer who needs no lease. A change of any
 * value ends the grant holding the key: a live one with a `state-changed` ending naming the first changed value,
 * an expired one as `expired` (as a takeover would); its holder is refused `state-changed` at its next operation.
 * Values that are already set change nothing and keep the grant. The token does not move (the ended grant's own
 * ending says why it ended); the next claim mints the next one.
 */
export function setKeyState(record: LeaseRecord | null, command: SetKeyStateCommand, now: StoreTime): Transition<SetKeyStateOutcome> {
  const { key } = command;
  const before = record?.state ?? NO_STATE;
  const state: Record<string, string> = { ...before };
  const changes: { name: string; from: string | null; to: string | null }[] = [];
  for (const name of Object.keys(command.values).sort(byCodeUnit)) {
    const to = stateValue(command.values, name);
    const from = stateValue(before, name);
    if (to === from) continue;
    changes.push({ name, from, to });
    if (to === null) delete state[name];
    // NOTE: defined, not assigned, so that a name like `__proto__` is an own value, not the prototype.
    else Object.defineProperty(state, name, { value: to, enumerable: true, writable: true, configurable: true });
  }
  const heldBefore = record?.heldUntil ?? null;
  const heldUntil = command.holdMs === undefined ? heldBefore : command.holdMs === null ? null : now + command.holdMs;
  const current = record ?? emptyRecord(key);
  const grant = current.grant;
  let ended: Ending | null = null;
  if (changes.length > 0 && grant !== null) {
    ended = isLive(grant, now)
      ? {
          kind: 'state-changed',
          token: grant.token,
          holder: grant.holder,
          runId: grant.runId,
          at: now,
          reason: null,
          by: command.by,
          change: changes[0]!,
        }
      : expiredEnding(grant);
  }
  const outcome: SetKeyStateOutcome = {
    ok: true,
    key,
    state: changes.length > 0 ? state : before,
    heldUntil,
    changed: changes.map((change) => change.name),
    ended,
    now,
  };
  if (changes.length === 0 && heldUntil === heldBefore) return unchanged(record, outcome);
  const next: LeaseRecord = {
    ...current,
    state: changes.length > 0 ? state : before,
    heldUntil,
    ...(ended === null ? {} : { grant: null, ending: ended }),
  };
  return changedTo(next, outcome);
}

/** A grant as operators see it (`remove`'s answer, `inspect`): everything but the secret, and whether it is live at `now`. */
function grantViewOf(grant: GrantState | null, now: StoreTime): GrantView | null {
  if (grant === null) return null;
  const { token, holder, runId, acquiredAt, expiresAt, attributes } = grant;
  return { token, holder, runId, acquiredAt, expiresAt, attributes, live: isLive(grant, now) };
}

/**
 * Remove: an operator deletes a key's record (grant, state, hold, checkpoint, submissions). Refused while a
 * live grant holds it unless `force`; an old grant's every operation then says `missing`. The store's token
 * floor outlives the record, so a key created again never reissues a token.
 */
export function remove(record: LeaseRecord | null, command: RemoveCommand, now: StoreTime): Transition<RemoveOutcome> {
  const { key } = command;
  if (record === null) return unchanged(record, { ok: false, reason: 'missing', key, token: null, now });
  if (command.expectedToken !== null && command.expectedToken !== record.token) {
    return unchanged(record, { ok: false, reason: 'superseded', key, token: record.token, now });
  }
  const { grant } = record;
  const live = grant !== null && isLive(grant, now);
  if (live && !command.force) return unchanged(record, { ok: false, reason: 'held', key, token: record.token, now });
  return deleted({ ok: true, key, token: record.token, grant: grantViewOf(grant, now), now });
}

/**
 * The submission's replay lookup and fence, in that order: `replayed` or `replay-conflict` when the run id was
 * recorded, the fence's refusal when it does not hold, `null` when the write may apply and record it. The
 * lookup comes first so that a worker retrying after its lease ended still learns its submission landed.
 */
export function checkSubmission(
  record: LeaseRecord | null,
  fence: Fence,
  submission: SubmissionCommand,
  now: StoreTime,
): SubmissionReplayed | ReplayConflict | FenceRefusal | null {
  const found = record?.submissions.find((recorded) => recorded.runId === submission.runId);
  if (found !== undefined) {
    const conflict: ReplayConflict = {
      ok: false,
      reason: 'replay-conflict',
      key: fence.key,
      expected: { runId: submission.runId, digest: submission.digest, token: fence.token },
      found,
      now,
    };
    if (found.digest !== submission.digest) return conflict;
    const sameGrant = found.token === fence.token && found.holder === fence.holder;
    if (!submission.bindToGrant || sameGrant) return { ok: false, reason: 'replayed', key: fence.key, submission: found, now };
    const verdict = checkFence(record, fence, now);
    return verdict.ok ? conflict : verdict;
  }
  const verdict = checkFence(record, fence, now);
  return verdict.ok ? null : verdict;
}

/** Records a submission that `checkSubmission` let through (the write applied): the newest kept, oldest forgotten. */
export function recordSubmission(
  record: LeaseRecord,
  fence: Fence,
  submission: SubmissionCommand,
  now: StoreTime,
): { readonly record: LeaseRecord; readonly submission: SubmissionRecord } {
  const recorded: SubmissionRecord = {
    runId: submission.runId,
    digest: submission.digest,
    token: fence.token,
    holder: fence.holder,
    at: now,
    receiptJson: submission.receiptJson,
  };
  const kept =
    record.submissions.length >= SUBMISSION_RETENTION
      ? record.submissions.slice(record.submissions.length - SUBMISSION_RETENTION + 1)
      : record.submissions;
  return { record: { ...record, submissions: [...kept, recorded] }, submission: recorded };
}

/** Inspect: the record as operators see it (no secret), with liveness judged at the store's now. */
export function inspect(record: LeaseRecord | null, key: string, now: StoreTime): StoreInspection {
  // NOTE: a key without a record shows as the empty record would (token 0, nothing kept), with exists false.
  const shown = record ?? emptyRecord(key);
  return {
    key,
    exists: record !== null,
    token: shown.token,
    grant: grantViewOf(shown.grant, now),
    ending: shown.ending,
    checkpoint: shown.checkpoint,
    recoveryRequired: shown.recoveryRequired,
    state: shown.state,
    heldUntil: shown.heldUntil !== null && now < shown.heldUntil ? shown.heldUntil : null,
    waiters: liveWaiters(shown.waiters, now),
    now,
  };
}
