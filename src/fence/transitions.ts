/**
 * The lease state machine as pure functions of (record, command, now). Each returns the next record (or the
 * same one, when nothing changes) and the outcome the store reports. No I/O, no clock, no randomness: the
 * secret comes in the command and the time comes in `now`.
 */
import type {
  CheckpointCommand,
  CheckpointOutcome,
  ClaimCommand,
  StoreClaimOutcome,
  StoreInspection,
  RecoverCommand,
  RecoverOutcome,
  ReleaseCommand,
  ReleaseOutcome,
  RenewCommand,
  RenewOutcome,
  RevokeCommand,
  RevokeOutcome,
} from './operations.js';
import { mintToken } from './token.js';
import type { LeaseRecord, StoreTime } from './types.js';
import { checkFence, expiredEnding, isLive } from './verdict.js';

/** The result of a transition: the record to store (`unchanged` when nothing must be written) and the outcome. */
export interface Transition<O> {
  readonly record: LeaseRecord | null;
  readonly changed: boolean;
  readonly outcome: O;
}

const unchanged = <O>(record: LeaseRecord | null, outcome: O): Transition<O> => ({ record, changed: false, outcome });
const changedTo = <O>(record: LeaseRecord, outcome: O): Transition<O> => ({ record, changed: true, outcome });

function expiresAtFrom(now: StoreTime, ttlMs: number | null): StoreTime | null {
  return ttlMs === null ? null : now + ttlMs;
}

/**
 * Claim: granted when the key is new, released, revoked or expired; refused while a live grant holds it, or
 * while a revoke's required recovery is pending and the claimer did not say `recovering`.
 * `tokenFloor` lets a store that may lose its data (Redis without persistence) keep tokens increasing.
 */
export function claim(record: LeaseRecord | null, command: ClaimCommand, now: StoreTime, tokenFloor = 0n): Transition<StoreClaimOutcome> {
  const { key } = command;
  const grant = record?.grant ?? null;
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
    return unchanged(record, { ok: false, reason: 'held', key, token, holder, runId, acquiredAt, expiresAt, now });
  }
  const previous = grant !== null ? expiredEnding(grant) : (record?.ending ?? null);
  const checkpoint = record?.checkpoint ?? null;
  if (record?.recoveryRequired && !command.recovering) {
    return unchanged(record, { ok: false, reason: 'recovery-required', key, token: record.token, previous, checkpoint, now });
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
    recoveryRequired: record?.recoveryRequired ?? false,
  };
  return changedTo(next, { ok: true, key, token, acquiredAt: now, expiresAt, previous, checkpoint, now });
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

/** Inspect: the record as operators see it (no secret), with liveness judged at the store's now. */
export function inspect(record: LeaseRecord | null, key: string, now: StoreTime): StoreInspection {
  if (record === null) {
    return { key, exists: false, token: 0n, grant: null, ending: null, checkpoint: null, recoveryRequired: false, now };
  }
  const { grant } = record;
  const grantView =
    grant === null
      ? null
      : {
          token: grant.token,
          holder: grant.holder,
          runId: grant.runId,
          acquiredAt: grant.acquiredAt,
          expiresAt: grant.expiresAt,
          attributes: grant.attributes,
          live: isLive(grant, now),
        };
  return {
    key,
    exists: true,
    token: record.token,
    grant: grantView,
    ending: record.ending,
    checkpoint: record.checkpoint,
    recoveryRequired: record.recoveryRequired,
    now,
  };
}
