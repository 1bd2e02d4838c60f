import { REINDEX } from '../../src/adapters/redis/item-index.js';

/**
 * Test hook: makes the current grant of a Redis lease record expire at the server's now. Rewrites
 * `expires`, the fifth NUL-separated part of the record's `lease` field (see src/adapters/redis/scripts.ts),
 * which holds just the token when nothing is held (then it changes nothing and returns 0).
 * KEYS[1]: the lease record. The expiry is an input of an item's claim-next index (`item-index.ts`): the hook
 * re-indexes it, as every script that changes the record does (real expiry writes nothing: the score is the expiry).
 */
export const EXPIRE_NOW_SCRIPT = `
local lease = redis.call('HGET', KEYS[1], 'lease')
local s1 = lease and string.find(lease, '\\0', 1, true)
if not s1 then return 0 end
local s4 = string.find(lease, '\\0', string.find(lease, '\\0', string.find(lease, '\\0', s1 + 1, true) + 1, true) + 1, true)
local s5 = string.find(lease, '\\0', s4 + 1, true)
local t = redis.call('TIME')
local micros = string.rep('0', 6 - #t[2]) .. t[2]
redis.call('HSET', KEYS[1], 'lease', string.sub(lease, 1, s4) .. t[1] .. string.sub(micros, 1, 3) .. string.sub(lease, s5))
local item = redis.call('HGET', KEYS[1], 'item')
${REINDEX('KEYS[1]', 'item')}
return 1`;
