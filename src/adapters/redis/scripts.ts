/**
 * The Lua scripts of the lease operations, one per operation (fenced writes and the token gate are in
 * `write-scripts.ts`), built from the fragments in `script-parts.ts`.
 *
 * ## Atomicity
 * Redis runs a script to completion before it runs any other command, so each script below is one atomic
 * step: it reads the clock (`TIME`) and the record, decides, and applies, with nothing in between. Each
 * applies its change under exactly the conditions of the pure transition of the same name in
 * `fence/transitions.ts`, and returns the record's PRE-IMAGE: the adapter runs the pure transition on that
 * pre-image and checks that the script applied a change exactly when the core says `changed`. So the
 * decision and its explanation (expected vs found) come from the core, and a divergence is caught.
 *
 * ## The record: one hash per lease key (`SEP` is NUL, which no name contains)
 * - `lease`: the token, then the current grant if any: token SEP secret SEP holder SEP run SEP expires
 *   SEP acquired SEP attributes, or just the token when nothing is held. The secret is stored as
 *   `'#' .. SHA1 hex of the secret` (`redis.sha1hex`), hashed by the script from what the caller
 *   presents: whoever reads the record (or MONITORs a replica, which receives the script's effects)
 *   cannot present it. The run is `''` for none, else
 *   `'='` .. run; expires `''` for never; attributes JSON text, `''` for none. A fence presents token SEP
 *   secret SEP holder SEP run SEP: it holds when that is the field's prefix and the grant has not expired,
 *   so the hot path reads, compares and rewrites one field. The token is never deleted: it is the floor of
 *   the next grant.
 * - `ending`: kind SEP token SEP holder SEP run SEP at SEP by SEP reason (`by`, `reason`: `''` for none;
 *   the reason, which may contain NUL, comes last).
 * - `checkpoint`: token SEP writtenAt SEP JSON text; `''` (or absent) for none.
 * - `recovery`: `'1'` while a revoke's required recovery is pending, else `''` (or absent).
 * - `memos`: the index of the last memoised requests on this key, and `m:` .. request id: each one's
 *   first reply, cmsgpack-packed (see `REMEMBER` in `script-parts.ts`); absent until the first one.
 * Clearing writes `''` rather than deleting, so every change is a single HSET (plus, for a memoised
 * operation past the 8th on a key, one HDEL of the oldest memo's reply).
 *
 * ## Reply
 * Every reply starts with `status`: `'+'` (applied) or `'-'` (not), then `TIME` in epoch µs (the token
 * floor; now = µs / 1000). Then the record as read before any change, in one of three shapes:
 * - a table `{ status, lease, ending, checkpoint, recovery }` (`REPLY`), cut after the last part the
 *   operation's outcome reads, `false` for an absent part: refusals, claims over a grant, revoke,
 *   recover, inspect, refused fenced writes, token gate writes with a fence (which append their results at
 *   `REPLY.extras`; an applied fenced write replies `WRITTEN`, see `write-scripts.ts`);
 * - `HELD`, a string: status SEP lease, when a fenced operation applied (its lease holds a grant);
 * - `FREE`, a string: status SEP recovery SEP checkpoint (token SEP writtenAt SEP JSON, or two SEPs when
 *   none) SEP token SEP ending, when a claim found nothing held.
 * A string costs the server and the client less than a table. No reply contains a stored secret or its
 * hash: the secret part of a replied `lease` is `'='` when it matches the secret the command presented,
 * `''` otherwise.
 *
 * ## Rules kept by every script
 * - Keys come in KEYS, values in ARGV; nothing is ever spliced into the source.
 * - Tokens are decimal strings: compared as strings, and incremented through doubles only below 2^53
 *   (exact there), digit by digit above. The clock in µs is built from `TIME`'s two parts as text.
 * - The record is never deleted and never given a TTL: it keeps the token floor, the ending and the
 *   checkpoint. Expiry is the stored `expires` (epoch ms) compared with `TIME` (ms stay far below 2^53).
 *   `expires` is written with `string.format('%d', ...)`: below 10^14 (the TTL is at most `MAX_TTL_MS`),
 *   the same digits as `.. ''` (`%.14g`), at half the cost.
 * - Scripts are straight-line code (no per-call closures) and read `TIME` once, first.
 */
import { increment } from './decimals.js';
import { PUBLISH_FREED } from './freed-channel.js';
import {
  CLOCK,
  FENCED,
  FENCED_MEMOISED,
  GRANT_LOCALS,
  GRANT_PARTS,
  MASKED,
  MEMO_FIELDS,
  REMEMBER,
  REPLAYED,
  SAFE_CHECKPOINT,
  TAKE_OVER,
} from './script-parts.js';

/** Where each part sits in a lease script's reply (0-based). */
export const REPLY = {
  status: 0,
  lease: 1,
  ending: 2,
  checkpoint: 3,
  recovery: 4,
  /** Where a token gate write's own results start. */
  extras: 5,
} as const;

/**
 * claim. KEYS: record. ARGV: secret, who (holder SEP run SEP), ttl ms ('' = never), then optionally
 * attributes JSON ('' = none) and recovering ('1'). The new token is max(token + 1, clock µs). A grant
 * that already has this secret is a re-delivery of this very claim: nothing changes, the adapter reports it.
 */
export const CLAIM_SCRIPT: string = `${CLOCK}
local hashed = '#' .. redis.sha1hex(ARGV[1])
local v = redis.call('HMGET', KEYS[1], 'lease', 'ending', 'checkpoint', 'recovery')
local checkpoint = v[3]
${SAFE_CHECKPOINT}
v[3] = checkpoint
local lease, token = v[1], v[1]
local s1 = lease and string.find(lease, '\\0', 1, true)
${GRANT_LOCALS}
if s1 then
  token = string.sub(lease, 1, s1 - 1)
  ${GRANT_PARTS}
  local live = expires == '' or now < tonumber(expires)
  local stored = string.sub(lease, s1 + 1, s2 - 1)
  if stored == hashed then
    return {'-' .. clock, string.sub(lease, 1, s1) .. '=' .. string.sub(lease, s2), v[2], v[3], v[4]}
  end
  v[1] = ${MASKED}
  if live then return {'-' .. clock, v[1], v[2], v[3], v[4]} end
end
local status = '+'
if v[4] == '1' and ARGV[5] ~= '1' then
  if s1 then return {'-' .. clock, v[1], v[2], v[3], v[4]} end
  status = '-'
else
  local next_token = clock
  if token and tonumber(token) + 1 > tonumber(clock) then
    ${increment('bumped', 'token')}
    next_token = bumped
  end
  local granted = next_token .. '\\0' .. hashed .. '\\0' .. ARGV[2] .. (ARGV[3] == '' and '' or string.format('%d', now + ARGV[3])) .. '\\0' .. now_ms .. '\\0' .. (ARGV[4] or '')
  if s1 then
    -- the previous grant expired: it becomes the recorded ending
    redis.call('HSET', KEYS[1], 'lease', granted, 'ending', ${TAKE_OVER})
    return {'+' .. clock, v[1], v[2], v[3], v[4]}
  end
  redis.call('HSET', KEYS[1], 'lease', granted)
end
-- FREE: nothing was held
return status .. clock .. '\\0' .. (v[4] or '') .. '\\0' .. ((v[3] and v[3] ~= '') and v[3] or '\\0\\0') .. '\\0' .. (token or '') .. '\\0' .. (v[2] or '')
`;

/** renew. KEYS: record. ARGV: fence, then ttl ms ('' = never). */
export const RENEW_SCRIPT: string = `${FENCED}
redis.call('HSET', KEYS[1], 'lease', prefix .. (ARGV[at] == '' and '' or string.format('%d', now + ARGV[at])) .. string.sub(lease, e))
return '+' .. clock .. '\\0' .. shown
`;

/**
 * checkpoint. KEYS: record. ARGV: fence, request id, replay window ms, then the checkpoint JSON. Writing
 * one resolves a pending recovery. Memoised (see FENCED_MEMOISED): ioredis re-sends a script whose reply
 * was lost, and by then a newer grant may hold the key; the re-delivery must report the checkpoint it stored.
 */
export const CHECKPOINT_SCRIPT: string = `${FENCED_MEMOISED}
local reply = '+' .. clock .. '\\0' .. shown
${REMEMBER('KEYS[1]')}
redis.call('HSET', KEYS[1], 'checkpoint', ARGV[1] .. '\\0' .. now_ms .. '\\0' .. ARGV[at], 'recovery', '', ${MEMO_FIELDS})
return reply
`;

/**
 * release. KEYS: record. ARGV: fence, then optionally the checkpoint mode ('clear' | 'set'; absent: keep)
 * and the checkpoint JSON. An explicit checkpoint decision (set or clear) resolves a pending recovery,
 * as in the pure core; keeping the checkpoint leaves it pending. Publishes on the freed channel
 * (`freed-channel.ts`) when it ends the grant, so waiters retry at once.
 */
export const RELEASE_SCRIPT: string = `${FENCED}
local ending = 'released\\0' .. ARGV[1] .. '\\0' .. ARGV[3] .. now_ms .. '\\0\\0'
local mode = ARGV[at]
if not mode then
  redis.call('HSET', KEYS[1], 'lease', ARGV[1], 'ending', ending)
else
  redis.call('HSET', KEYS[1], 'lease', ARGV[1], 'ending', ending, 'recovery', '', 'checkpoint', mode == 'set' and (ARGV[1] .. '\\0' .. now_ms .. '\\0' .. ARGV[at + 1]) or '')
end
${PUBLISH_FREED('released')}
return '+' .. clock .. '\\0' .. shown
`;

/**
 * revoke. KEYS: record. ARGV: reason, by, requireRecovery ('1'|'0'), expected token ('' = any), request
 * id, replay window ms. Every reply is memoised under the request id (see REMEMBER), so a re-delivered
 * revoke returns the first reply instead of revoking whatever grant came next. Only whether a checkpoint
 * exists matters: its stamp is replied (and memoised), not its text; a stored checkpoint that lacks its
 * stamp (corrupted) is replied as it is. Publishes on the freed channel (`freed-channel.ts`) when it
 * ends a grant.
 */
export const REVOKE_SCRIPT: string = `${CLOCK}
local v = redis.call('HMGET', KEYS[1], 'lease', 'ending', 'checkpoint', 'recovery', 'memos')
local request, window = ARGV[5], tonumber(ARGV[6])
local memos = v[5] or ''
${REPLAYED('KEYS[1]')}
local lease = v[1]
local s1 = lease and string.find(lease, '\\0', 1, true)
${GRANT_LOCALS}
local has_checkpoint = v[3] and v[3] ~= ''
local checkpoint = v[3]
${SAFE_CHECKPOINT}
if has_checkpoint then v[3] = string.sub(checkpoint, 1, string.find(checkpoint, '\\0', string.find(checkpoint, '\\0', 1, true) + 1, true)) end
local reply = {'-' .. clock, lease, v[2], v[3], v[4]}
if s1 then
  ${GRANT_PARTS}
  reply[2] = ${MASKED}
end
local token = s1 and string.sub(lease, 1, s1 - 1)
if s1 and (ARGV[4] == '' or ARGV[4] == token) then
  reply[1] = '+' .. clock
  ${REMEMBER('KEYS[1]')}
  ${increment('bumped', 'token')}
  redis.call('HSET', KEYS[1], 'lease', bumped, 'recovery', (ARGV[3] == '1' and has_checkpoint) and '1' or '', ${MEMO_FIELDS},
    'ending', 'revoked\\0' .. token .. '\\0' .. string.sub(lease, s2 + 1, s4) .. now_ms .. '\\0' .. ARGV[2] .. '\\0' .. ARGV[1])
  ${PUBLISH_FREED('revoked')}
else
  ${REMEMBER('KEYS[1]')}
  redis.call('HSET', KEYS[1], ${MEMO_FIELDS})
end
return reply
`;

/**
 * recover. KEYS: record. ARGV: fence, request id, replay window ms, then action ('resume' | 'discard').
 * Reads the checkpoint once it holds. Memoised like checkpoint. A stored checkpoint that lacks its stamp
 * (corrupted) is resumed as the whole stored text.
 */
export const RECOVER_SCRIPT: string = `${FENCED_MEMOISED}
local checkpoint = redis.call('HGET', KEYS[1], 'checkpoint')
local stored = checkpoint
${SAFE_CHECKPOINT}
local reply = {'+' .. clock, shown, false, checkpoint}
${REMEMBER('KEYS[1]')}
if ARGV[at] == 'discard' or not stored or stored == '' then
  redis.call('HSET', KEYS[1], 'checkpoint', '', 'recovery', '', ${MEMO_FIELDS})
else
  local json = string.sub(checkpoint, string.find(checkpoint, '\\0', string.find(checkpoint, '\\0', 1, true) + 1, true) + 1)
  redis.call('HSET', KEYS[1], 'checkpoint', ARGV[1] .. '\\0' .. now_ms .. '\\0' .. json, 'recovery', '', ${MEMO_FIELDS})
end
return reply
`;

/** inspect. KEYS: record. Reads the record and the clock together; changes nothing. */
export const INSPECT_SCRIPT: string = `${CLOCK}
local v = redis.call('HMGET', KEYS[1], 'lease', 'ending', 'checkpoint', 'recovery')
local checkpoint = v[3]
${SAFE_CHECKPOINT}
v[3] = checkpoint
local lease = v[1]
local s1 = lease and string.find(lease, '\\0', 1, true)
${GRANT_LOCALS}
if s1 then
  ${GRANT_PARTS}
  v[1] = ${MASKED}
end
return {'-' .. clock, v[1], v[2], v[3], v[4]}
`;
