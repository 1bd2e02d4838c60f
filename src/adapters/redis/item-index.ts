/**
 * Claim-next on Redis (issue 24, capability 1): the layout of a set and the Lua fragment that keeps its index
 * equal to `availableSince` (fence/claim-next.ts) of each item's record.
 *
 * ## Layout (every key of a set `S` carries the hash tag `{S}`: one Cluster slot per set)
 * - `<prefix>{S}:ready`: a sorted set, member = item key, score = `availableSince` in epoch ms. An item whose
 *   `availableSince` is null (a grant without expiry, a key blocked for recovery) is not in it.
 * - `<prefix>{S}:by-secret`: a hash, secret hash -> item key, of the last grant of each item (the "delivered
 *   twice" lookup of claim-next); the record's `listed` field names its entry, replaced at the item's next grant,
 *   so it holds at most one entry per item.
 * - In the item's record hash (`keys.ts`; its tag is `{S}` by the tag rule), the field `item`:
 *   dueAt SEP `<prefix>{S}:` SEP item key. Membership lives in the record, so every script that writes a record
 *   learns whether it is an item from the hash it already reads (one more field of the same HMGET: no key, no
 *   argument and no round trip more for a key that is no item). An item never claimed is a hash with `item`
 *   alone, which every script reads as no record (no `lease` field).
 *
 * ## Keeping `ready` equal (expiry needs no write: an expired grant's availability is its stored expiry)
 * Every script that changes an input of `availableSince` (claim, renew, checkpoint, release, revoke, recover,
 * setKeyState, remove, a fenced write with a checkpoint, claim-next, addItems) ends with `REINDEX` on the record
 * it wrote: for an item it re-reads the fields after the write and sets the score (or removes the member).
 * The scripts touch `ready` and `by-secret` without declaring them: they are in the record's slot (same tag),
 * which redis-server allows in Cluster too (checked on 7.0.15: a script may touch an undeclared key of the
 * slot it was routed to).
 */

/**
 * After a write to the record `key` (a Lua expression) whose `item` field is the Lua expression `item` (false
 * or nil for a key that is no item): the score of the item in its set's `ready`, recomputed from the record as
 * written, the same formula as `availableSince`: null when recovery is pending or the grant never expires;
 * else the latest of dueAt, the grant's expiry (or the ending's `at` when no grant), and the hold.
 * Lease: token SEP secret SEP holder SEP run SEP expires SEP ...; ending: kind SEP token SEP holder SEP run SEP at SEP ...
 */
export const REINDEX = (key: string, item: string): string => `
if ${item} then
  local x = redis.call('HMGET', ${key}, 'lease', 'ending', 'recovery', 'hold')
  local x1 = string.find(${item}, '\\0', 1, true)
  local x2 = string.find(${item}, '\\0', x1 + 1, true)
  local since = tonumber(string.sub(${item}, 1, x1 - 1))
  local xl = x[1]
  local xs = xl and string.find(xl, '\\0', 1, true)
  if x[3] == '1' then
    since = nil
  elseif xs then
    local p = string.find(xl, '\\0', string.find(xl, '\\0', string.find(xl, '\\0', xs + 1, true) + 1, true) + 1, true)
    local e = string.sub(xl, p + 1, string.find(xl, '\\0', p + 1, true) - 1)
    if e == '' then since = nil else since = math.max(since, tonumber(e)) end
  elseif x[2] and x[2] ~= '' then
    local p = 0
    for _ = 1, 4 do p = string.find(x[2], '\\0', p + 1, true) end
    since = math.max(since, tonumber(string.sub(x[2], p + 1, string.find(x[2], '\\0', p + 1, true) - 1)))
  end
  if since and x[4] and x[4] ~= '' then since = math.max(since, tonumber(x[4])) end
  local ready = string.sub(${item}, x1 + 1, x2 - 1) .. 'ready'
  if since then
    redis.call('ZADD', ready, string.format('%d', since), string.sub(${item}, x2 + 1))
  else
    redis.call('ZREM', ready, string.sub(${item}, x2 + 1))
  end
end
`;

/**
 * After a grant with the secret hash \`hashed\` on the record \`key\` whose \`item\` field is \`item\`: lists the
 * grant in the set's \`by-secret\` (replacing the item's previous entry), then \`REINDEX\`.
 */
export const GRANTED_ITEM = (key: string, item: string): string => `
if ${item} then
  local y1 = string.find(${item}, '\\0', 1, true)
  local y2 = string.find(${item}, '\\0', y1 + 1, true)
  local by_secret = string.sub(${item}, y1 + 1, y2 - 1) .. 'by-secret'
  local listed = redis.call('HGET', ${key}, 'listed')
  if listed then redis.call('HDEL', by_secret, listed) end
  redis.call('HSET', by_secret, hashed, string.sub(${item}, y2 + 1))
  redis.call('HSET', ${key}, 'listed', hashed)
end
${REINDEX(key, item)}`;
