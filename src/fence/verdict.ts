import type { Ending, Fence, FenceFinding, FenceReason, FenceVerdict, GrantState, LeaseRecord, StoreTime } from './types.js';

/** Whether a grant is live at `now`. Strict: at `now === expiresAt` it is expired. */
export function isLive(grant: GrantState, now: StoreTime): boolean {
  return grant.expiresAt === null || now < grant.expiresAt;
}

/** The ending a grant has if it is found expired at `now` (it is recorded as such when someone takes over). */
export function expiredEnding(grant: GrantState): Ending {
  return {
    kind: 'expired',
    token: grant.token,
    holder: grant.holder,
    runId: grant.runId,
    at: grant.expiresAt ?? 0,
    reason: null,
    by: null,
  };
}

const OK: FenceVerdict = { ok: true };

/**
 * Checks a fence against a record at the store's clock. This is THE decision every fenced operation
 * (renew, checkpoint, fenced write, release, recover) makes; adapters that evaluate it in SQL or Lua must
 * agree with it exactly, and use it to explain their refusals.
 *
 * Order of checks: existence, then which grant is current (token), then proof of identity (secret,
 * holder, run), then bound attributes, then time. So a refusal names the most fundamental failure.
 */
export function checkFence(record: LeaseRecord | null, fence: Fence, now: StoreTime): FenceVerdict {
  const refuse = (reason: FenceReason, found: FenceFinding, attribute: AttributeMismatchOrNull = null): FenceVerdict => ({
    ok: false,
    reason,
    key: fence.key,
    expected: { token: fence.token, holder: fence.holder, runId: fence.runId },
    found,
    attribute,
    now,
  });
  if (record === null) {
    return refuse('missing', { token: null, holder: null, runId: null, expiresAt: null, ending: null });
  }
  const { grant } = record;
  const found: FenceFinding = {
    token: record.token,
    holder: grant?.holder ?? null,
    runId: grant?.runId ?? null,
    expiresAt: grant?.expiresAt ?? null,
    ending: record.ending,
  };
  if (grant === null || grant.token !== fence.token) {
    return refuse(reasonWithoutCurrentGrant(record, fence), found);
  }
  if (grant.secret !== fence.secret) return refuse('wrong-secret', found);
  if (grant.holder !== fence.holder || grant.runId !== fence.runId) return refuse('holder-mismatch', found);
  for (const [name, expected] of Object.entries(fence.attributes ?? {})) {
    const actual = grant.attributes[name] ?? null;
    if (actual !== expected) return refuse('attribute-mismatch', found, { name, expected, found: actual });
  }
  if (!isLive(grant, now)) return refuse('expired', found);
  return OK;
}

type AttributeMismatchOrNull = { name: string; expected: string; found: string | null } | null;

/** Why a fence fails when the presented token is not the record's current grant. */
function reasonWithoutCurrentGrant(record: LeaseRecord, fence: Fence): FenceReason {
  if (fence.token > record.token) return 'not-held'; // a token this key never issued
  if (record.grant !== null) return 'superseded'; // a newer grant holds the key
  const { ending } = record;
  if (ending !== null && ending.token === fence.token) return ending.kind; // this grant ended: released / revoked
  // Nothing is held and the last ending is not this grant's: a newer grant came and went, or nothing was ever granted.
  return fence.token < record.token ? 'superseded' : 'not-held';
}
