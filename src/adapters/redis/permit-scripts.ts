/**
 * The Lua script of semaphores on Redis (issue 25: `acquirePermit`; the adapter is `redis-permits.ts`). One script,
 * one atomic step on the server's clock as every script of `scripts.ts`: Redis runs no other command while it reads
 * every permit of the semaphore and grants one, so concurrent acquires of one semaphore are serialised for free.
 *
 * ## Layout (every key of a semaphore `N` carries the hash tag `{N}`: one Cluster slot per semaphore)
 * - A permit is an ordinary lease record (`scripts.ts`) under the lease key `{N}:permit-<i>`, i.e. the hash
 *   `<prefix>{N}#{N}:permit-<i>:lease` (`keys.ts`). It is no item of any set (no `item` field).
 * - `<prefix>{N}:permits`: a set of the indexes (decimal text) of the permits that have or had a record, so an
 *   acquire reads the permits that exist without SCAN. The store adds an index whenever a script may create a
 *   permit's record: this script when it grants, and a `claim` or `setKeyState` on a permit key (the variants in
 *   `scripts.ts`, chosen by the adapter, which the hot path of other keys never runs). An index whose record was
 *   removed since stays: the acquire reads it as no record (the tombstone's `floor` is the chosen key's own).
 */
import { DECIMAL_LESS, increment } from './decimals.js';
import { CLOCK, GRANT_LOCALS, GRANT_PARTS, SAFE_CHECKPOINT } from './script-parts.js';
import { CLAIM_SCRIPT, SET_KEY_STATE_SCRIPT } from './scripts.js';

/** CLAIM_SCRIPT without its clock (which the acquire reads once, first), as the body of a Lua function. */
const CLAIM_BODY: string = (() => {
  if (!CLAIM_SCRIPT.startsWith(CLOCK)) throw new Error('leasefence redis: CLAIM_SCRIPT no longer starts with CLOCK');
  return CLAIM_SCRIPT.slice(CLOCK.length);
})();

/**
 * acquirePermit. KEYS: the semaphore's `permits` set. ARGV: the permits' record name up to the index
 * (`<prefix>{N}#{N}:permit-`; the record of index i is that .. i .. ':lease'), the limit, then a claim's ARGV
 * (`claimArgs`: secret, who, ttl, attributes, recovering; no required state). The records it reads and writes are
 * not declared (which ones is known only here): they carry the semaphore's tag, so they are in the slot the script
 * runs on. Decides as `fence/permits.ts#acquirePermit` (the adapter judges the reply with it and checks they agree):
 * 1. Reads every permit whose index is in `permits` and that has a `lease`: each is replied as a row
 *    `{status, lease (secret part '=' when it is this acquire's, else ''), ending, checkpoint (false), recovery,
 *    state (false), hold}`, the table shape of `scripts.ts`, with its index in `indexes`.
 * 2. A live grant with this secret: a re-delivery. Its row carries its checkpoint; replies
 *    `{'again', status and clock, indexes, rows, index}` and changes nothing.
 * 3. `limit` or more live grants: `{'full', status and clock, indexes, rows}`.
 * 4. Else the permit from 1 to limit that is not live, blocked for recovery exactly when the acquire is
 *    `recovering`, with the earliest `availableSince` up to now (no record: 0; an expired grant: its expiry; else
 *    its ending's `at`, or 0; then the later of that and its hold), the lowest index among equals; none:
 *    `{'full', ...}`. The chosen one is claimed with CLAIM_SCRIPT's own body, its token floor raised to the
 *    highest token of every permit + 1 (tokens rise across the semaphore). Replies `{'granted', status and
 *    clock, indexes, rows, index, the claim's reply, the new token}`.
 */
export const ACQUIRE_PERMIT_SCRIPT: string = `${CLOCK}
local function claim_body(KEYS, ARGV, clock)
${CLAIM_BODY}
end
local C = {}
for i = 3, #ARGV do C[#C + 1] = ARGV[i] end
local limit = tonumber(ARGV[2])
local recovering = C[5] == '1'
local hashed = '#' .. redis.sha1hex(C[1])
local members = redis.call('SMEMBERS', KEYS[1])
local indexes, rows, info = {}, {}, {}
local highest, live, repeated = '0', 0, nil
for _, m in ipairs(members) do
  local v = redis.call('HMGET', ARGV[1] .. m .. ':lease', 'lease', 'ending', 'recovery', 'hold')
  local lease = v[1]
  if lease then
    local i = tonumber(m)
    local s1 = string.find(lease, '\\0', 1, true)
    ${GRANT_LOCALS}
    local token, shown, p = lease, lease, {blocked = v[3] == '1', since = 0}
    if s1 then
      token = string.sub(lease, 1, s1 - 1)
      ${GRANT_PARTS}
      p.mine = string.sub(lease, s1 + 1, s2 - 1) == hashed
      shown = string.sub(lease, 1, s1) .. (p.mine and '=' or '') .. string.sub(lease, s2)
      p.live = expires == '' or now < tonumber(expires)
      if not p.live then p.since = tonumber(expires) end
    elseif v[2] and v[2] ~= '' then
      local q = 0
      for _ = 1, 4 do q = string.find(v[2], '\\0', q + 1, true) end
      p.since = tonumber(string.sub(v[2], q + 1, string.find(v[2], '\\0', q + 1, true) - 1))
    end
    if v[4] and v[4] ~= '' then p.since = math.max(p.since, tonumber(v[4])) end
    if p.live then
      live = live + 1
      if p.mine and (not repeated or i < repeated) then repeated = i end
    end
    local a, b = highest, token
    ${DECIMAL_LESS}
    if less then highest = token end
    info[i] = p
    indexes[#indexes + 1] = m
    rows[#rows + 1] = {'-' .. clock, shown, v[2], false, v[3], false, v[4]}
  end
end
if repeated then
  -- NOTE: the same acquire delivered twice: its grant is answered again, with its checkpoint (as claim's is).
  for r = 1, #indexes do
    if tonumber(indexes[r]) == repeated then
      local checkpoint = redis.call('HGET', ARGV[1] .. indexes[r] .. ':lease', 'checkpoint')
      ${SAFE_CHECKPOINT}
      rows[r][4] = checkpoint
    end
  end
  return {'again', '-' .. clock, indexes, rows, repeated}
end
if live >= limit then return {'full', '-' .. clock, indexes, rows} end
local chosen, chosen_since = nil, nil
for i = 1, limit do
  local p = info[i]
  if not (p and p.live) and (p and p.blocked or false) == recovering then
    local since = p and p.since or 0
    if since <= now and (not chosen or since < chosen_since) then chosen, chosen_since = i, since end
  end
end
if not chosen then return {'full', '-' .. clock, indexes, rows} end
${increment('above', 'highest')}
local a, b = clock, above
${DECIMAL_LESS}
local rec = ARGV[1] .. chosen .. ':lease'
local p = info[chosen]
if p and p.mine then
  -- NOTE: an expired grant of this very secret is taken over as any expired grant (the core's claim grants it);
  -- CLAIM_SCRIPT would answer it as a re-delivery, so its secret part is cleared first (the ending never has it).
  local lease = redis.call('HGET', rec, 'lease')
  local s1 = string.find(lease, '\\0', 1, true)
  local s2 = string.find(lease, '\\0', s1 + 1, true)
  redis.call('HSET', rec, 'lease', string.sub(lease, 1, s1) .. string.sub(lease, s2))
end
local reply = claim_body({rec}, C, less and above or clock)
if not p then redis.call('SADD', KEYS[1], tostring(chosen)) end
local granted = redis.call('HGET', rec, 'lease')
return {'granted', '+' .. clock, indexes, rows, chosen, reply, string.sub(granted, 1, (string.find(granted, '\\0', 1, true) or 0) - 1)}
`;

/**
 * Before the body of a script that may create a permit's record (`claim`, `setKeyState` on a permit key): adds the
 * permit's index, read from its record's name (KEYS[1], `...:permit-<i>:lease`), to the semaphore's `permits` set
 * (KEYS[2]), so that the next acquire reads it. Added even when the operation is refused: an index without a record
 * is read as no record.
 */
const INDEX_PERMIT = `
redis.call('SADD', KEYS[2], string.match(KEYS[1], ':permit%-(%d+):lease$'))
`;

/** `script` (which starts with CLOCK) with `INDEX_PERMIT` after its clock. KEYS: the record, then the permits set. */
function indexingPermit(name: string, script: string): string {
  if (!script.startsWith(CLOCK)) throw new Error(`leasefence redis: ${name} no longer starts with CLOCK`);
  return `${CLOCK}${INDEX_PERMIT}${script.slice(CLOCK.length)}`;
}

/** CLAIM_SCRIPT on a permit key. KEYS: the record, the semaphore's `permits` set. ARGV: as CLAIM_SCRIPT. */
export const PERMIT_CLAIM_SCRIPT: string = indexingPermit('CLAIM_SCRIPT', CLAIM_SCRIPT);

/** SET_KEY_STATE_SCRIPT on a permit key. KEYS: the record, the semaphore's `permits` set. ARGV: as SET_KEY_STATE_SCRIPT. */
export const PERMIT_SET_KEY_STATE_SCRIPT: string = indexingPermit('SET_KEY_STATE_SCRIPT', SET_KEY_STATE_SCRIPT);
