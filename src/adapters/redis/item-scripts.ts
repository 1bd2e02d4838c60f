/**
 * The Lua scripts of claim-next on Redis (`addItems`, `removeItems`, `claimNext`; the layout and the index
 * fragment are in `item-index.ts`). Each is one atomic step on the server's clock, as every script of
 * `scripts.ts`. The keys of one call are all in the set's slot (the tag rule, see `redis-items.ts`).
 */
import { CLOCK, SAFE_CHECKPOINT } from './script-parts.js';
import { CLAIM_SCRIPT } from './scripts.js';
import { REINDEX } from './item-index.js';

/**
 * addItems. KEYS: the set's `ready`, then the items' records. ARGV: the set's key base (`<prefix>{S}:`), the
 * delay in ms, then the item keys (ARGV[i + 1] is the key of the record KEYS[i]). A record that already has an
 * `item` field is an item of this set (the tag rule leaves no other): left as it is, due time too. A new item is
 * indexed from its record as it is (a key granted or held back before it was added waits for that). A removed
 * record's tombstone that becomes an item loses its expiry (the item must outlive it). Reply: status and clock,
 * dueAt, the keys added.
 */
export const ADD_ITEMS_SCRIPT: string = `${CLOCK}
local due = string.format('%d', now + tonumber(ARGV[2]))
local added = {}
for i = 2, #KEYS do
  if redis.call('HEXISTS', KEYS[i], 'item') == 0 then
    local item = due .. '\\0' .. ARGV[1] .. '\\0' .. ARGV[i + 1]
    redis.call('HSET', KEYS[i], 'item', item)
    redis.call('PERSIST', KEYS[i])
    ${REINDEX('KEYS[i]', 'item')}
    added[#added + 1] = ARGV[i + 1]
  end
end
return {'+' .. clock, due, added}
`;

/**
 * removeItems. KEYS: the set's `ready` and `by-secret`, then the items' records. ARGV: the replay window ms, '',
 * then the item keys (ARGV[i] is the key of the record KEYS[i]). Takes the `item` field and the `by-secret`
 * entry away and the member out of `ready`; the record, its grant and state stay. A removed record's tombstone
 * (no lease) that is left expires after the replay window again. Reply: status and clock, the keys removed.
 */
export const REMOVE_ITEMS_SCRIPT: string = `${CLOCK}
local removed = {}
for i = 3, #KEYS do
  local f = redis.call('HMGET', KEYS[i], 'item', 'listed', 'lease')
  if f[1] then
    redis.call('HDEL', KEYS[i], 'item', 'listed')
    if f[2] then redis.call('HDEL', KEYS[2], f[2]) end
    redis.call('ZREM', KEYS[1], ARGV[i])
    if not f[3] and redis.call('EXISTS', KEYS[i]) == 1 then redis.call('PEXPIRE', KEYS[i], ARGV[1]) end
    removed[#removed + 1] = ARGV[i]
  end
end
return {'+' .. clock, removed}
`;

/** CLAIM_SCRIPT without its clock (which claim-next reads once, first), as the body of a Lua function. */
const CLAIM_BODY: string = (() => {
  if (!CLAIM_SCRIPT.startsWith(CLOCK)) throw new Error('leasefence redis: CLAIM_SCRIPT no longer starts with CLOCK');
  return CLAIM_SCRIPT.slice(CLOCK.length);
})();

/**
 * claimNext. KEYS: the set's `ready` and `by-secret`. ARGV: prefix, set name, record-first ('1' or ''), batch
 * size, then a claim's ARGV (`claimArgs`, not recovering). The records it reads and writes are not declared (which
 * ones is known only here): they carry the set's tag, so they are in the slot the script runs on.
 * 1. Delivered twice: `by-secret` names the item whose grant has this secret; when that grant is live, replies
 *    `{'again', the record as inspect replies it (secret part '='), item key, item field}` and changes nothing.
 * 2. Else walks `ready` from the front (scores up to now, `batch` at a time), skipping items whose state does not
 *    match the claim's expect, and claims the first other one with CLAIM_SCRIPT's own body (the index is equal
 *    to availableSince, so that item is the one available longest and claimable); under record-first, a grant
 *    that took over an expired run (its ending is now `expired`) sets `recovery`. Replies `{'granted', the claim's
 *    reply, item key, score, item field, hold field}`.
 * 3. Else `{'idle', status and clock, the score of the first matching item after now (absent: none)}`.
 * Ties at one score come in byte order of the member's UTF-8, equal to the core's code-unit order except for
 * characters above U+FFFF against U+E000..U+FFFF (documented in docs/stores.md).
 */
export const CLAIM_NEXT_SCRIPT: string = `${CLOCK}
local function claim_body(KEYS, ARGV)
${CLAIM_BODY}
end
local C = {}
for i = 5, #ARGV do C[#C + 1] = ARGV[i] end
local function record_of(item) return ARGV[1] .. '{' .. ARGV[2] .. '}' .. (item == ARGV[2] and '' or '#' .. item) .. ':lease' end
local hashed = '#' .. redis.sha1hex(C[1])
local again = redis.call('HGET', KEYS[2], hashed)
if again then
  local rec = record_of(again)
  local v = redis.call('HMGET', rec, 'lease', 'ending', 'checkpoint', 'recovery', 'state', 'hold', 'item')
  local lease = v[1]
  local s1 = lease and string.find(lease, '\\0', 1, true)
  if s1 and v[7] then
    local s2 = string.find(lease, '\\0', s1 + 1, true)
    local s4 = string.find(lease, '\\0', string.find(lease, '\\0', s2 + 1, true) + 1, true)
    local expires = string.sub(lease, s4 + 1, string.find(lease, '\\0', s4 + 1, true) - 1)
    if string.sub(lease, s1 + 1, s2 - 1) == hashed and (expires == '' or now < tonumber(expires)) then
      local checkpoint = v[3]
      ${SAFE_CHECKPOINT}
      return {'again', {'-' .. clock, string.sub(lease, 1, s1) .. '=' .. string.sub(lease, s2), v[2], checkpoint, v[4], v[5], v[6]}, again, v[7]}
    end
  end
end
local expect = tonumber(C[6])
local function matches(rec)
  if not expect then return true end
  local state = redis.call('HGET', rec, 'state')
  local values = (state and state ~= '') and cjson.decode(state) or {}
  for i = 7, 5 + 2 * expect, 2 do
    if values[C[i]] ~= (C[i + 1] ~= '' and string.sub(C[i + 1], 2) or nil) then return false end
  end
  return true
end
local batch = tonumber(ARGV[4])
local offset = 0
repeat
  local page = redis.call('ZRANGEBYSCORE', KEYS[1], '-inf', now_ms, 'WITHSCORES', 'LIMIT', offset, batch)
  for i = 1, #page, 2 do
    local rec = record_of(page[i])
    if matches(rec) then
      -- NOTE: the hold too: the claim's reply leaves out a hold that has passed (the grant clears it), but it is
      -- an input of the item's availability, which the adapter checks against the score.
      local read = redis.call('HMGET', rec, 'item', 'hold')
      local item = read[1]
      local reply = claim_body({rec}, C)
      local status = type(reply) == 'table' and reply[1] or reply
      if ARGV[3] == '1' and string.sub(status, 1, 1) == '+' then
        local ending = redis.call('HGET', rec, 'ending')
        if ending and string.sub(ending, 1, 8) == 'expired\\0' then
          redis.call('HSET', rec, 'recovery', '1')
          ${REINDEX('rec', 'item')}
        end
      end
      return {'granted', reply, page[i], page[i + 1], item, read[2]}
    end
  end
  offset = offset + batch
until #page < 2 * batch
offset = 0
repeat
  local page = redis.call('ZRANGEBYSCORE', KEYS[1], '(' .. now_ms, '+inf', 'WITHSCORES', 'LIMIT', offset, batch)
  for i = 1, #page, 2 do
    if matches(record_of(page[i])) then return {'idle', '-' .. clock, page[i + 1]} end
  end
  offset = offset + batch
until #page < 2 * batch
return {'idle', '-' .. clock}
`;
