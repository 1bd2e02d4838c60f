import type {
  AttributeMismatch,
  Ending,
  Fence,
  FenceFinding,
  FenceReason,
  FenceVerdict,
  GrantState,
  LeaseRecord,
  StoreTime,
} from './types.js';
import { stateValue } from './types.js';

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
 * Order of checks: existence, then which grant is current (token; a grant ended by a key-state change says
 * `state-changed` with the value that changed), then proof of identity (secret, holder, run), then bound
 * attributes, then time. So a refusal names the most fundamental failure.
 */
export function checkFence(record: LeaseRecord | null, fence: Fence, now: StoreTime): FenceVerdict {
  if (record === null) {
    return refusal(fence, now, 'missing', { token: null, holder: null, runId: null, expiresAt: null, ending: null });
  }
  const { grant } = record;
  if (grant === null || grant.token !== fence.token) {
    const reason = reasonWithoutCurrentGrant(record, fence);
    const change = reason === 'state-changed' ? record.ending?.change : undefined;
    // NOTE: the value as the grant was made (`from`) against the value the key has now (it may have moved on).
    const field = change === undefined ? null : { name: change.name, expected: change.from, found: stateValue(record.state, change.name) };
    return refusal(fence, now, reason, findingOf(record), field);
  }
  if (grant.secret !== fence.secret) return refusal(fence, now, 'wrong-secret', findingOf(record));
  if (grant.holder !== fence.holder || grant.runId !== fence.runId) return refusal(fence, now, 'holder-mismatch', findingOf(record));
  const required = fence.attributes;
  // NOTE: the common case (no required attributes, a live grant) allocates nothing.
  if (required !== undefined) {
    for (const name of Object.keys(required)) {
      const expected = required[name] as string;
      const actual = grant.attributes[name] ?? null;
      if (actual !== expected) return refusal(fence, now, 'attribute-mismatch', findingOf(record), { name, expected, found: actual });
    }
  }
  if (!isLive(grant, now)) return refusal(fence, now, 'expired', findingOf(record));
  return OK;
}

/** What the store held: the key's token and its grant's holder, run and expiry, and the last ending. */
function findingOf(record: LeaseRecord): FenceFinding {
  const { grant } = record;
  return {
    token: record.token,
    holder: grant?.holder ?? null,
    runId: grant?.runId ?? null,
    expiresAt: grant?.expiresAt ?? null,
    ending: record.ending,
  };
}

function refusal(
  fence: Fence,
  now: StoreTime,
  reason: FenceReason,
  found: FenceFinding,
  attribute: AttributeMismatchOrNull = null,
): FenceVerdict {
  return {
    ok: false,
    reason,
    key: fence.key,
    expected: { token: fence.token, holder: fence.holder, runId: fence.runId },
    found,
    attribute,
    now,
  };
}

type AttributeMismatchOrNull = AttributeMismatch | null;

/** Why a fence fails when the presented token is not the record's current grant. */
function reasonWithoutCurrentGrant(record: LeaseRecord, fence: Fence): FenceReason {
  if (fence.token > record.token) return 'not-held'; // a token this key never issued
  if (record.grant !== null) return 'superseded'; // a newer grant holds the key
  const { ending } = record;
  if (ending !== null && ending.token === fence.token) return ending.kind; // this grant ended: released / revoked
  // Nothing is held and the last ending is not this grant's: a newer grant came and went, or nothing was ever granted.
  return fence.token < record.token ? 'superseded' : 'not-held';
}
