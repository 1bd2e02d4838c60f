/**
 * Lua fragments of a key's queue of waiting claims (`fence/queue.ts`) on Redis: the record's `waiters` field (see
 * `scripts.ts`), read, judged and rewritten inside the claim script (and the dequeue script) of the key, so the
 * queue changes in the claim's one round trip and in its Cluster slot.
 *
 * ## The field
 * `waiters`: the queue, oldest first, each entry waiterId SEP holder SEP arrivedAt SEP expiresAt SEP (epoch ms as
 * decimal text); absent (or `''`) when nobody waits, so a claim of a key nobody waits for reads one more absent
 * field in the HMGET it makes anyway and writes nothing more. Entries whose `expiresAt` has passed stay until the
 * next script that rewrites the field drops them: every reader (the scripts here, the adapter's core) judges live
 * entries only, as `liveWaiters` does.
 */
import { MAX_WAITERS } from '../../fence/queue.js';

/**
 * Given `wl` (the stored `waiters` field, or false) and `now`: the live entries in queue order, as `w_ids[i]`,
 * `w_heads[i]` (waiterId SEP holder SEP arrivedAt SEP) and `w_exps[i]` (expiresAt as text), `w_n` of them, and
 * `w_total`, the number of entries stored (live or not).
 */
export const LIVE_WAITERS: string = `
local w_ids, w_heads, w_exps, w_n, w_total = {}, {}, {}, 0, 0
if wl and wl ~= '' then
  local pos, size = 1, #wl
  while pos <= size do
    local a = string.find(wl, '\\0', pos, true)
    local c = string.find(wl, '\\0', string.find(wl, '\\0', a + 1, true) + 1, true)
    local d = string.find(wl, '\\0', c + 1, true)
    local exp = string.sub(wl, c + 1, d - 1)
    w_total = w_total + 1
    if tonumber(exp) > now then
      w_n = w_n + 1
      w_ids[w_n], w_heads[w_n], w_exps[w_n] = string.sub(wl, pos, a - 1), string.sub(wl, pos, c), exp
    end
    pos = d + 1
  end
end
`;

/**
 * After `LIVE_WAITERS`, for a waiting claim whose queue arguments start at ARGV[`at`] (the place's TTL in ms, then
 * the waiter ids, the claimant first) and whose who is ARGV[2] (holder SEP run SEP): `enqueue` of `queue.ts`. The
 * named entries are renewed to now + TTL; the ids missing are appended in the attempt's order, arrivedAt now, while
 * the queue has fewer than MAX_WAITERS entries.
 */
export const ENQUEUE = (at: string): string => `
local place = string.format('%d', now + tonumber(ARGV[${at}]))
local named, present = {}, {}
for i = ${at} + 1, #ARGV do named[ARGV[i]] = true end
for i = 1, w_n do
  present[w_ids[i]] = true
  if named[w_ids[i]] then w_exps[i] = place end
end
local w_who = string.sub(ARGV[2], 1, string.find(ARGV[2], '\\0', 1, true)) .. now_ms .. '\\0'
for i = ${at} + 1, #ARGV do
  if w_n >= ${MAX_WAITERS} then break end
  local id = ARGV[i]
  if not present[id] then
    present[id] = true
    w_n = w_n + 1
    w_ids[w_n], w_heads[w_n], w_exps[w_n] = id, id .. '\\0' .. w_who, place
  end
end
`;

/**
 * After `LIVE_WAITERS` (and `ENQUEUE`, or with entries taken out by setting their `w_heads[i]` to false): sets
 * `w_packed` to the entries left, as the field stores them (`''` when none is left).
 */
export const PACK_WAITERS: string = `
local w_out, w_k = {}, 0
for i = 1, w_n do
  if w_heads[i] then
    w_k = w_k + 1
    w_out[w_k] = w_heads[i] .. w_exps[i] .. '\\0'
  end
end
local w_packed = table.concat(w_out)
`;

/** Stores `packed` (a Lua expression: the queue as `PACK_WAITERS` packs it) as the `waiters` field of `key`; `''` deletes it. */
export const STORE_WAITERS = (key: string, packed: string): string =>
  `if ${packed} == '' then redis.call('HDEL', ${key}, 'waiters') else redis.call('HSET', ${key}, 'waiters', ${packed}) end`;

/** After `LIVE_WAITERS` (and `ENQUEUE`, or entries taken out as for `PACK_WAITERS`): stores the entries left. */
export const WRITE_WAITERS = (key: string): string => `${PACK_WAITERS}
${STORE_WAITERS(key, 'w_packed')}
`;
