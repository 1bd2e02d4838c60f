/**
 * PURE: `check`'s verdict from one inspection of the key (the store's `inspect`, one read-only round trip),
 * with the fence's own rules (`checkFence`: existence, current token, holder and run, attributes, expiry),
 * then the time left against `minTtlMs`, all on the store's clock. The inspection carries no secret: the
 * secret is proven by the next fenced operation, which a check never replaces.
 */
import type { StoreInspection } from './fence/operations.js';
import type { Fence, LeaseRecord } from './fence/types.js';
import { checkFence } from './fence/verdict.js';
import type { CheckOutcome } from './refusals.js';

/** The verdict of `check` for `fence` on `inspection`. */
export function judgeCheck(inspection: StoreInspection, fence: Fence, minTtlMs: number): CheckOutcome {
  const { now, grant } = inspection;
  // NOTE: the record as `checkFence` reads it, rebuilt from the inspection; the grant's secret is the fence's own.
  const record: LeaseRecord | null = inspection.exists
    ? {
        key: inspection.key,
        token: inspection.token,
        grant:
          grant === null
            ? null
            : {
                token: grant.token,
                secret: fence.secret,
                holder: grant.holder,
                runId: grant.runId,
                acquiredAt: grant.acquiredAt,
                expiresAt: grant.expiresAt,
                attributes: grant.attributes,
              },
        ending: inspection.ending,
        checkpoint: null,
        recoveryRequired: inspection.recoveryRequired,
        state: inspection.state,
        heldUntil: inspection.heldUntil,
        submissions: [],
        waiters: inspection.waiters,
      }
    : null;
  const verdict = checkFence(record, fence, now);
  if (!verdict.ok) return verdict;
  const expiresAt = grant?.expiresAt ?? null;
  const remainingMs = expiresAt === null ? null : expiresAt - now;
  if (expiresAt !== null && remainingMs !== null && remainingMs < minTtlMs) {
    return { ok: false, reason: 'ttl-insufficient', key: fence.key, token: fence.token, expiresAt, remainingMs, minTtlMs, now };
  }
  return { ok: true, key: fence.key, token: fence.token, expiresAt, remainingMs, now };
}
