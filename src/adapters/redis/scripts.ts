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
 *   so the hot path reads, compares and rewrites one field. The token outlives every grant: it is the floor of
 *   the next one. A record made by `setKeyState` before any grant has the lease `'0'`.
 * - `ending`: kind SEP token SEP holder SEP run SEP at SEP by SEP reason (`by`, `reason`: `''` for none;
 *   the reason, which may contain NUL, comes last). A `state-changed` ending has an empty reason followed by
 *   SEP and the change as JSON, `{ n: name, f: from, t: to }` (an absent value has no member).
 * - `checkpoint`: token SEP writtenAt SEP JSON text; `''` (or absent) for none.
 * - `recovery`: `'1'` while a revoke's required recovery is pending, else `''` (or absent).
 * - `state`: the key state, a JSON object of strings as cjson writes it; `''` (or absent) for none. Read only
 *   by `setKeyState`, a claim that requires some state, `inspect`, `list` and a refusal that must name it.
 * - `hold`: epoch ms until which claims are refused (`held-back`); `''` (or absent) for none. Kept when it
 *   has passed (the core keeps it too) until a grant clears it.
 * - `memos`: the index of the last memoised requests on this key, and `m0` to `m7`: their first replies,
 *   cmsgpack-packed, in the slots the index names (see `REMEMBER` in `script-parts.ts`); absent until the first.
 * - `waiters`: the key's queue of waiting claims, oldest first (see `queue-parts.ts`); absent when nobody waits.
 *   Read by a claim that found no live grant, or a waiting claim; written by a waiting claim refused `held`,
 *   `held-back` or `queued` and by a grant that takes entries out; deleted by `remove` and by the dequeue that
 *   empties it. Every other script leaves it as it is (none writes the whole hash).
 * - `floor`: only after a `remove` (see REMOVE_SCRIPT): the highest token the key issued before, read by
 *   the next claim while the record has no lease or the lease `'0'`.
 * - `watched`: epoch ms until which someone watches the key's freed channel (`freed-interest.ts`); absent when
 *   nobody ever did. Written only by the mark script, read only by renew and release (with the lease).
 * - `item` and `listed`: only on an item of a claim-next set (see `item-index.ts`): its due time and set, and
 *   its entry in the set's `by-secret`. Every script that writes a record reads `item` with what it already
 *   reads and, for an item, ends with `REINDEX` (the set's sorted set kept equal to `availableSince`).
 * Clearing writes `''` rather than deleting, so every change is a single HSET (a memoised operation's reply
 * overwrites the oldest slot: no HDEL).
 *
 * ## Submissions: one more hash per lease key (`KeyNames.submissions`, the record's hash tag)
 * `r:` .. run id: digest SEP token SEP holder SEP run SEP at SEP receipt JSON (`''` for none), and `order`:
 * the run ids recorded, oldest first, each followed by SEP. The newest `SUBMISSION_RETENTION` (32) are
 * kept. Only a fenced write that carries a submission reads or writes it (see `write-scripts.ts`); `remove`
 * deletes it.

 * ## Reply
 * Every reply starts with `status`: `'+'` (applied) or `'-'` (not), then `TIME` in epoch µs (the token
 * floor; now = µs / 1000). Then the record as read before any change, in one of three shapes:
 * - a table `{ status, lease, ending, checkpoint, recovery, state, hold }` (`REPLY`), cut after the last
 *   part the operation's outcome reads, `false` for an absent part: refusals, claims over a grant, revoke,
 *   recover, inspect, setKeyState, remove, refused fenced writes, token gate writes with a fence (which
 *   append their results at `REPLY.extras`; an applied fenced write replies `WRITTEN`, see
 *   `write-scripts.ts`);
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
 * - The record is deleted only by `remove`, which leaves a tombstone (the token floor and the memos) with
 *   a TTL; a record is never given a TTL otherwise: it keeps the token floor, the ending and the
 *   checkpoint. Expiry is the stored `expires` (epoch ms) compared with `TIME` (ms stay far below 2^53).
 *   `expires` is written with `string.format('%d', ...)`: below 10^14 (the TTL is at most `MAX_TTL_MS`),
 *   the same digits as `.. ''` (`%.14g`), at half the cost.
 * - Scripts are straight-line code (no per-call closures) and read `TIME` once, first.
 */
import { DECIMAL_LESS, increment } from './decimals.js';
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
import { GRANTED_ITEM, REINDEX } from './item-index.js';
import { ENQUEUE, LIVE_WAITERS, PACK_WAITERS, STORE_WAITERS, WRITE_WAITERS } from './queue-parts.js';

/** Where each part sits in a lease script's reply (0-based). */
export const REPLY = {
  status: 0,
  lease: 1,
  ending: 2,
  checkpoint: 3,
  recovery: 4,
  /** The key state (see the record layout above). */
  state: 5,
  /** The hold (see the record layout above). */
  hold: 6,
  /**
   * Where a script's own results start: a token gate write's, a fenced write's found submission, a claim's
   * token floor of a removed record.
   */
  extras: 7,
  /**
   * The stored queue (the `waiters` field, see `queue-parts.ts`), in the replies of the scripts that judge it: a
   * claim that found one, inspect, list, dequeue. Read only from those (others put their own results there).
   */
  waiters: 8,
} as const;

/**
 * claim. KEYS: record. ARGV: secret, who (holder SEP run SEP), ttl ms ('' = never), then optionally
 * attributes JSON ('' = none), recovering ('1' or ''), the required key state: n ('' = none), then n name and
 * value pairs (value `''` for absent, else `'='` .. value; names in code-unit order, so the first difference is
 * the core's), then the queue mode: absent for a plain claim, `'j'` for a claim that jumps the queue (claim-next
 * and acquirePermit send it too: they do not consult the queue), `'w'` (`'wj'`: and jumps) for a waiting claim,
 * followed by its place's TTL in ms and its waiter ids, the claimant first (`queue-parts.ts`). The checks run in
 * the core's order: the required state (reading the `state` field only when the claim requires some), a live
 * grant (`held`), the hold (`held-back`), a pending recovery, the queue (`queued`). A waiting claim refused
 * `held`, `held-back` or `queued` writes its waiters (`ENQUEUE`) and replies status `'+'`; any other refusal
 * writes nothing. The new token is max(token + 1, clock µs), or max(floor + 1, clock µs) on a record a `remove`
 * left (no lease, or a lease of token 0 made by `setKeyState` since): its `floor` is replied at `REPLY.extras` so
 * the core mints the same. A grant clears a hold that has passed, and takes its claimant and the expired entries
 * out of the queue. A grant that already has this secret is a re-delivery of this very claim: nothing changes,
 * the adapter reports it. A claim refused `held` replies the lease alone (`{ status, lease }`): never the
 * checkpoint, nor the queue (a waiting one reads and writes the queue, but its outcome does not name it; nor does
 * `held-back`'s). A grant or a `queued` refusal that had a queue to judge replies the stored field at
 * `REPLY.waiters` (a table reply), so the core judges it too; a claim that found no queue replies as before the
 * queue existed.
 */
export const CLAIM_SCRIPT: string = `${CLOCK}
local hashed = '#' .. redis.sha1hex(ARGV[1])
local lease = redis.call('HGET', KEYS[1], 'lease')
local token, masked, stored, live = lease, lease, nil, false
local s1 = lease and string.find(lease, '\\0', 1, true)
${GRANT_LOCALS}
if s1 then
  token = string.sub(lease, 1, s1 - 1)
  ${GRANT_PARTS}
  stored = string.sub(lease, s1 + 1, s2 - 1)
  masked = ${MASKED}
  live = stored ~= hashed and (expires == '' or now < tonumber(expires))
end
-- NOTE: with a required state, every reply carries the state (the core judges the requirement first).
local expect, state = tonumber(ARGV[6]), false
if expect then
  state = redis.call('HGET', KEYS[1], 'state')
  local values = (state and state ~= '') and cjson.decode(state) or {}
  for i = 7, 5 + 2 * expect, 2 do
    if values[ARGV[i]] ~= (ARGV[i + 1] ~= '' and string.sub(ARGV[i + 1], 2) or nil) then
      return {'-' .. clock, masked, false, false, false, state}
    end
  end
end
local q = 7 + 2 * (expect or 0)
local mode = ARGV[q]
local waiting = mode == 'w' or mode == 'wj'
-- NOTE: a live grant of another secret is refused 'held', which the lease alone explains: the checkpoint
-- (up to its size limit), the ending and the recovery flag are neither read nor replied (issue 29 item 2).
-- Nor is the queue: a waiting claim's 'held' (and 'held-back') refusal writes it, but its outcome does not name it.
if live then
  if not waiting then return expect and {'-' .. clock, masked, false, false, false, state} or {'-' .. clock, masked} end
  local wl = redis.call('HGET', KEYS[1], 'waiters')
  ${LIVE_WAITERS}
  ${ENQUEUE('q + 1')}
  ${WRITE_WAITERS('KEYS[1]')}
  return expect and {'+' .. clock, masked, false, false, false, state} or {'+' .. clock, masked}
end
-- NOTE: the token floor of a removed record is read only where one can be: no lease, or a token of 0.
local read = (lease and token ~= '0') and redis.call('HMGET', KEYS[1], 'ending', 'checkpoint', 'recovery', 'hold', 'item', 'waiters')
  or redis.call('HMGET', KEYS[1], 'ending', 'checkpoint', 'recovery', 'hold', 'item', 'waiters', 'floor')
local checkpoint = read[2]
${SAFE_CHECKPOINT}
local v = {masked, read[1], checkpoint, read[3]}
if s1 and stored == hashed then
  return {'-' .. clock, string.sub(lease, 1, s1) .. '=' .. string.sub(lease, s2), v[2], v[3], v[4], state}
end
local hold, floor = read[4], read[7]
-- NOTE: a claim that jumps the queue neither judges nor rewrites it (its expired entries wait for the next claim
-- that does): wl is the queue to judge, false when there is none.
local wl = mode ~= 'j' and read[6] ~= '' and read[6]
if hold and hold ~= '' and now < tonumber(hold) then
  if not waiting then return {'-' .. clock, v[1], v[2], v[3], v[4], state, hold} end
  ${LIVE_WAITERS}
  ${ENQUEUE('q + 1')}
  ${WRITE_WAITERS('KEYS[1]')}
  return {'+' .. clock, v[1], v[2], v[3], v[4], state, hold}
end
local status = '+'
if v[4] == '1' and ARGV[5] ~= '1' then
  if s1 then return {'-' .. clock, v[1], v[2], v[3], v[4], state} end
  status = '-'
else
  -- the queue: the key goes to its first live waiter; a grant takes the claimant and the expired entries out
  local w_left = false
  -- NOTE: a waiting claim that names other waiters queues them when granted, even on a key nobody waited for.
  if wl or (waiting and #ARGV > q + 2) then
    ${LIVE_WAITERS}
    local claimant = waiting and ARGV[q + 2]
    if w_n > 0 and w_ids[1] ~= claimant and mode ~= 'wj' and v[4] ~= '1' then
      if not waiting then return {'-' .. clock, v[1], v[2], v[3], v[4], state, hold, floor or false, wl} end
      ${ENQUEUE('q + 1')}
      ${WRITE_WAITERS('KEYS[1]')}
      return {'+' .. clock, v[1], v[2], v[3], v[4], state, hold, floor or false, wl}
    end
    if waiting then
      ${ENQUEUE('q + 1')}
    end
    local found = false
    for i = 1, w_n do
      if w_ids[i] == claimant then w_heads[i], found = false, true end
    end
    if found or w_n < w_total then
      ${PACK_WAITERS}
      w_left = w_packed
    end
  end
  local base = floor or token
  local next_token = clock
  if base and tonumber(base) + 1 > tonumber(clock) then
    ${increment('bumped', 'base')}
    next_token = bumped
  end
  local granted = next_token .. '\\0' .. hashed .. '\\0' .. ARGV[2] .. (ARGV[3] == '' and '' or string.format('%d', now + ARGV[3])) .. '\\0' .. now_ms .. '\\0' .. (ARGV[4] or '')
  -- NOTE: a hold that has passed is cleared by the grant that follows it (hold is '' or absent otherwise).
  local passed = hold and hold ~= ''
  if s1 then
    -- the previous grant expired: it becomes the recorded ending
    if passed then
      redis.call('HSET', KEYS[1], 'lease', granted, 'ending', ${TAKE_OVER}, 'hold', '')
    else
      redis.call('HSET', KEYS[1], 'lease', granted, 'ending', ${TAKE_OVER})
    end
    if w_left then ${STORE_WAITERS('KEYS[1]', 'w_left')} end
    ${GRANTED_ITEM('KEYS[1]', 'read[5]')}
    if wl then return {'+' .. clock, v[1], v[2], v[3], v[4], state, false, false, wl} end
    return {'+' .. clock, v[1], v[2], v[3], v[4], state}
  end
  if passed then redis.call('HSET', KEYS[1], 'lease', granted, 'hold', '') else redis.call('HSET', KEYS[1], 'lease', granted) end
  if w_left then ${STORE_WAITERS('KEYS[1]', 'w_left')} end
  -- a removed record's tombstone (see REMOVE_SCRIPT) is a record again: it keeps no expiry
  if floor then redis.call('PERSIST', KEYS[1]) end
  ${GRANTED_ITEM('KEYS[1]', 'read[5]')}
end
if floor or expect or wl then return {status .. clock, v[1], v[2], v[3], v[4], state, false, floor or false, wl} end
-- FREE: nothing was held
return status .. clock .. '\\0' .. (v[4] or '') .. '\\0' .. ((v[3] and v[3] ~= '') and v[3] or '\\0\\0') .. '\\0' .. (token or '') .. '\\0' .. (v[2] or '')
`;

/** renew. KEYS: record. ARGV: fence, then ttl ms ('' = never). */
export const RENEW_SCRIPT: string = `${FENCED}
redis.call('HSET', KEYS[1], 'lease', prefix .. (ARGV[at] == '' and '' or string.format('%d', now + ARGV[at])) .. string.sub(lease, e))
${REINDEX('KEYS[1]', 'item')}
return '+' .. clock .. '\\0' .. shown
`;

/**
 * checkpoint. KEYS: record. ARGV: fence, request id, replay window ms, then the checkpoint JSON. Writing
 * one resolves a pending recovery. Memoised (see FENCED_MEMOISED): ioredis re-sends a script whose reply
 * was lost, and by then a newer grant may hold the key; the re-delivery must report the checkpoint it stored.
 */
export const CHECKPOINT_SCRIPT: string = `${FENCED_MEMOISED}
local reply = '+' .. clock .. '\\0' .. shown
${REMEMBER}
redis.call('HSET', KEYS[1], 'checkpoint', ARGV[1] .. '\\0' .. now_ms .. '\\0' .. ARGV[at], 'recovery', '', ${MEMO_FIELDS})
${REINDEX('KEYS[1]', 'item')}
return reply
`;

/**
 * release. KEYS: record. ARGV: fence, then optionally the checkpoint mode ('clear' | 'set' | 'keep': absent
 * is keep), the checkpoint JSON (for 'set', else '') and the hold in ms from now (absent: the hold is kept).
 * An explicit checkpoint decision (set or clear) resolves a pending recovery, as in the pure core; keeping the
 * checkpoint leaves it pending. Publishes on the freed channel (`freed-channel.ts`) when it ends the grant while
 * the record's `watched` mark lasts (`freed-interest.ts`), so waiters retry at once (a held-back key refuses them
 * until the hold has passed).
 */
export const RELEASE_SCRIPT: string = `${FENCED}
local ending = 'released\\0' .. ARGV[1] .. '\\0' .. ARGV[3] .. now_ms .. '\\0\\0'
local mode = ARGV[at]
if not mode then
  redis.call('HSET', KEYS[1], 'lease', ARGV[1], 'ending', ending)
elseif mode == 'keep' then
  redis.call('HSET', KEYS[1], 'lease', ARGV[1], 'ending', ending, 'hold', string.format('%d', now + ARGV[at + 2]))
else
  local checkpoint = mode == 'set' and (ARGV[1] .. '\\0' .. now_ms .. '\\0' .. ARGV[at + 1]) or ''
  if ARGV[at + 2] then
    redis.call('HSET', KEYS[1], 'lease', ARGV[1], 'ending', ending, 'recovery', '', 'checkpoint', checkpoint, 'hold', string.format('%d', now + ARGV[at + 2]))
  else
    redis.call('HSET', KEYS[1], 'lease', ARGV[1], 'ending', ending, 'recovery', '', 'checkpoint', checkpoint)
  end
end
${REINDEX('KEYS[1]', 'item')}
-- NOTE: only while someone watches the key (freed-interest.ts): most releases have nobody waiting.
if read[3] and now < tonumber(read[3]) then ${PUBLISH_FREED('released')} end
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
local v = redis.call('HMGET', KEYS[1], 'lease', 'ending', 'checkpoint', 'recovery', 'memos', 'item')
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
  ${REMEMBER}
  ${increment('bumped', 'token')}
  redis.call('HSET', KEYS[1], 'lease', bumped, 'recovery', (ARGV[3] == '1' and has_checkpoint) and '1' or '', ${MEMO_FIELDS},
    'ending', 'revoked\\0' .. token .. '\\0' .. string.sub(lease, s2 + 1, s4) .. now_ms .. '\\0' .. ARGV[2] .. '\\0' .. ARGV[1])
  ${REINDEX('KEYS[1]', 'v[6]')}
  ${PUBLISH_FREED('revoked')}
else
  ${REMEMBER}
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
${REMEMBER}
if ARGV[at] == 'discard' or not stored or stored == '' then
  redis.call('HSET', KEYS[1], 'checkpoint', '', 'recovery', '', ${MEMO_FIELDS})
else
  local json = string.sub(checkpoint, string.find(checkpoint, '\\0', string.find(checkpoint, '\\0', 1, true) + 1, true) + 1)
  redis.call('HSET', KEYS[1], 'checkpoint', ARGV[1] .. '\\0' .. now_ms .. '\\0' .. json, 'recovery', '', ${MEMO_FIELDS})
end
${REINDEX('KEYS[1]', 'item')}
return reply
`;

/**
 * inspect. KEYS: record. Reads the record and the clock together; changes nothing. Replies the queue at
 * `REPLY.waiters`, as stored (the adapter's core keeps the live entries).
 */
export const INSPECT_SCRIPT: string = `${CLOCK}
local v = redis.call('HMGET', KEYS[1], 'lease', 'ending', 'checkpoint', 'recovery', 'state', 'hold', 'waiters')
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
return {'-' .. clock, v[1], v[2], v[3], v[4], v[5], v[6], false, v[7]}
`;

/**
 * dequeue. KEYS: record. ARGV: the waiter ids leaving. Takes them out of the record's queue (with the expired
 * entries, as the core's `dequeue` keeps the live ones left); nothing changes when none of them is queued (live).
 * Publishes on the freed channel when the first live waiter left while the key is claimable (no live grant, no
 * hold in force) and somebody still waits: the next waiter is told to try, as a release tells it. Replies the
 * pre-image `{ status, lease, false, false, false, false, hold, false, waiters }`. A re-delivery finds the ids
 * gone and changes nothing.
 */
export const DEQUEUE_SCRIPT: string = `${CLOCK}
local v = redis.call('HMGET', KEYS[1], 'lease', 'hold', 'waiters')
local lease, wl = v[1], v[3]
if not lease then return {'-' .. clock} end
local s1 = string.find(lease, '\\0', 1, true)
${GRANT_LOCALS}
local masked, live = lease, false
if s1 then
  ${GRANT_PARTS}
  masked = ${MASKED}
  live = expires == '' or now < tonumber(expires)
end
local reply = {'-' .. clock, masked, false, false, false, false, v[2], false, wl}
if not wl or wl == '' then return reply end
${LIVE_WAITERS}
local leaving, removed = {}, 0
for i = 1, #ARGV do leaving[ARGV[i]] = true end
for i = 1, w_n do
  if leaving[w_ids[i]] then w_heads[i], removed = false, removed + 1 end
end
if removed == 0 then return reply end
reply[1] = '+' .. clock
${WRITE_WAITERS('KEYS[1]')}
if w_heads[1] == false and removed < w_n and not live and (not v[2] or v[2] == '' or now >= tonumber(v[2])) then
  ${PUBLISH_FREED('dequeued')}
end
return reply
`;

/**
 * setKeyState. KEYS: record. ARGV: by, the hold ('k': keep, 'c': cancel, else ms from now), request id, replay
 * window ms, then n and n name and value pairs (as a claim's required state: value `''` to remove the name;
 * names in code-unit order). An applied change is memoised (see REMEMBER): re-delivered after another writer's
 * change, it returns its first reply instead of setting its values again. A
 * changed value ends the grant that holds the key: a live one with a `state-changed` ending naming the first
 * changed value (`{ n, f, t }` as cjson writes it: an absent value has no member), an expired one as
 * `expired`; the lease keeps its token. Unchanged values and hold write nothing. On a key without a record it
 * makes one of token 0 (no grant yet; a removed record's floor stays in its `floor` for the next claim).
 * Replies the pre-image `{ status, lease, false, false, false, state, hold }`. Publishes on the freed channel
 * when it ends a grant.
 */
export const SET_KEY_STATE_SCRIPT: string = `${CLOCK}
local v = redis.call('HMGET', KEYS[1], 'lease', 'state', 'hold', 'memos', 'item')
local request, window = ARGV[3], tonumber(ARGV[4])
local memos = v[4] or ''
${REPLAYED('KEYS[1]')}
local lease = v[1]
local s1 = lease and string.find(lease, '\\0', 1, true)
${GRANT_LOCALS}
local masked = lease
if s1 then
  ${GRANT_PARTS}
  masked = ${MASKED}
end
local reply = {'-' .. clock, masked, false, false, false, v[2], v[3]}
local values = (v[2] and v[2] ~= '') and cjson.decode(v[2]) or {}
local changed, first = false, nil
for i = 6, 4 + 2 * tonumber(ARGV[5]), 2 do
  local to = ARGV[i + 1] ~= '' and string.sub(ARGV[i + 1], 2) or nil
  local from = values[ARGV[i]]
  if from ~= to then
    if not changed then first = {n = ARGV[i], f = from, t = to} end
    changed = true
    values[ARGV[i]] = to
  end
end
local hold = v[3] or ''
local hold_after = ARGV[2] == 'k' and hold or (ARGV[2] == 'c' and '' or string.format('%d', now + ARGV[2]))
if not changed and hold_after == hold then return reply end
reply[1] = '+' .. clock
${REMEMBER}
local fields = {'hold', hold_after, ${MEMO_FIELDS}}
if changed then
  fields[#fields + 1], fields[#fields + 2] = 'state', next(values) and cjson.encode(values) or ''
end
if not lease then
  -- a new record, of token 0; a removed record's tombstone (see REMOVE_SCRIPT) loses its expiry
  fields[#fields + 1], fields[#fields + 2] = 'lease', '0'
  redis.call('PERSIST', KEYS[1])
elseif s1 and changed then
  local ending
  if expires == '' or now < tonumber(expires) then
    ending = 'state-changed\\0' .. string.sub(lease, 1, s1) .. string.sub(lease, s2 + 1, s4) .. now_ms .. '\\0' .. ARGV[1] .. '\\0\\0' .. cjson.encode(first)
  else
    ending = ${TAKE_OVER}
  end
  fields[#fields + 1], fields[#fields + 2], fields[#fields + 3], fields[#fields + 4] = 'lease', string.sub(lease, 1, s1 - 1), 'ending', ending
end
redis.call('HSET', KEYS[1], unpack(fields))
${REINDEX('KEYS[1]', 'v[5]')}
if s1 and changed then ${PUBLISH_FREED('state-changed')} end
return reply
`;

/**
 * remove. KEYS: record, submissions. ARGV: force ('1' or ''), expected token ('' = any), request id, replay
 * window ms. Deletes the record's fields (lease, ending, checkpoint, recovery, state, hold, waiters) and its
 * submissions, unless the core refuses (no record: `missing`; another token: `superseded`; a live grant
 * without force: `held`). What stays is a tombstone: the hash keeps `floor`, the highest token the key
 * issued (the next claim mints above it, see CLAIM_SCRIPT), and the memos of the last requests, so that a
 * re-delivered request (this remove, or a fenced write whose reply was lost) returns its first reply instead
 * of acting on a key created again. The tombstone expires after the replay window, or once `TIME` has
 * passed the floor if that is later (tokens are at least the clock in µs from then on). An applied remove
 * is memoised (see REMEMBER) and publishes on the freed channel. Replies `{ status, lease }`.
 */
export const REMOVE_SCRIPT: string = `${CLOCK}
local v = redis.call('HMGET', KEYS[1], 'lease', 'memos', 'floor', 'item')
local request, window = ARGV[3], tonumber(ARGV[4])
local memos = v[2] or ''
${REPLAYED('KEYS[1]')}
local lease = v[1]
if not lease then return {'-' .. clock} end
local s1 = string.find(lease, '\\0', 1, true)
${GRANT_LOCALS}
local token, masked, live = lease, lease, false
if s1 then
  token = string.sub(lease, 1, s1 - 1)
  ${GRANT_PARTS}
  masked = ${MASKED}
  live = expires == '' or now < tonumber(expires)
end
local reply = {'-' .. clock, masked}
if (ARGV[2] ~= '' and ARGV[2] ~= token) or (live and ARGV[1] ~= '1') then return reply end
reply[1] = '+' .. clock
local floor = token
if v[3] then
  local a, b = token, v[3]
  ${DECIMAL_LESS}
  if less then floor = v[3] end
end
${REMEMBER}
redis.call('HDEL', KEYS[1], 'lease', 'ending', 'checkpoint', 'recovery', 'state', 'hold', 'waiters')
redis.call('HSET', KEYS[1], 'floor', floor, ${MEMO_FIELDS})
redis.call('DEL', KEYS[2])
-- NOTE: an item stays in its set (its record gone, it is available from its due time): its hash keeps no expiry.
${REINDEX('KEYS[1]', 'v[4]')}
if #floor <= 18 and not v[4] then
  local ahead = math.ceil((tonumber(floor) - tonumber(clock)) / 1000) + 1
  redis.call('PEXPIRE', KEYS[1], string.format('%d', ahead > window and ahead or window))
end
${PUBLISH_FREED('removed')}
return reply
`;
