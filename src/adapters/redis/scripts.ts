/**
 * Every Lua script the Redis adapter sends, one per operation.
 *
 * ## Atomicity
 * Redis runs a script to completion before it runs any other command, so each script below is one atomic
 * step: it reads the clock (`TIME`) and the record, decides, and applies, with nothing in between. Each
 * applies its change under exactly the conditions of the pure transition of the same name in
 * `fence/transitions.ts`, and returns the record's PRE-IMAGE: the adapter runs the pure transition on that
 * pre-image and checks that the script applied a change exactly when the core says `changed`. So the
 * decision and its explanation (expected vs found) come from the core, and a divergence is caught.
 *
 * ## Reply shape (every lease script)
 * The record's hash fields in `RECORD_FIELDS` order (`false` when absent), then `applied` (1|0), `now`
 * (epoch ms), `floor` (epoch µs, decimal string), then anything script-specific. The `secret` slot never
 * carries the stored secret: it is `'1'` when it equals the secret the command presented, `'0'` otherwise.
 * Scripts whose outcome cannot contain the checkpoint send `''` instead of its JSON.
 *
 * ## Rules kept by every script
 * - Keys come in KEYS, values in ARGV; nothing is ever spliced into the source.
 * - Tokens are decimal strings, compared and incremented digit by digit: never `tonumber`ed (Lua numbers
 *   are doubles, exact only up to 2^53).
 * - The record is never deleted and never given a TTL: it keeps the token floor, the ending and the
 *   checkpoint. Expiry is the stored `expires` (epoch ms) compared with `TIME` (ms stay far below 2^53).
 * - Scripts are short: `TIME` advances while a script runs, and each script reads it once.
 */

/** The hash fields of a lease record, in the order every script returns them. */
export const RECORD_FIELDS = [
  'token', // 1: the key's highest token (decimal)
  'holder', // 2: present iff a grant exists
  'secret', // 3: the grant's secret (replied as a match flag, see above)
  'run', // 4: the grant's run id, absent for null
  'acquired', // 5: epoch ms
  'expires', // 6: epoch ms, absent for "never expires"
  'attrs', // 7: bound attributes as JSON text, absent for {}
  'ending', // 8: released | expired | revoked
  'ending_token', // 9
  'ending_holder', // 10
  'ending_run', // 11
  'ending_at', // 12
  'ending_reason', // 13
  'ending_by', // 14
  'checkpoint', // 15: JSON text
  'checkpoint_token', // 16
  'checkpoint_at', // 17
  'recovery', // 18: '1' while a revoke's required recovery is pending
] as const;

/** Where `applied`, `now` and `floor` sit in a lease script's reply (0-based). */
export const STATUS_OFFSET: number = RECORD_FIELDS.length;

/**
 * Reads the clock and the record; names the fields the decisions use. Scripts whose outcome cannot
 * contain the checkpoint load it lean: slot 15 reads `checkpoint_token` (present exactly when a
 * checkpoint is) and replies `''`, so a large checkpoint is neither copied into Lua nor sent back.
 */
function load(withCheckpoint: boolean): string {
  const fields = RECORD_FIELDS.map((name) => (name === 'checkpoint' && !withCheckpoint ? "'checkpoint_token'" : `'${name}'`)).join(', ');
  return `
local t = redis.call('TIME')
local now = t[1] * 1000 + math.floor(t[2] / 1000)
local floor = t[1] .. string.rep('0', 6 - #t[2]) .. t[2]
local v = redis.call('HMGET', KEYS[1], ${fields})
local token, holder, secret, run, expires = v[1], v[2], v[3], v[4], v[6]
local function done(applied, presented)
  v[3] = secret and (secret == presented and '1' or '0')
  ${withCheckpoint ? '' : "if v[15] then v[15] = '' end"}
  v[19], v[20], v[21] = applied, now, floor
  return v
end
local sets, dels, nsets, ndels = {}, {}, 0, 0
local function put(name, value) sets[nsets + 1] = name; sets[nsets + 2] = value; nsets = nsets + 2 end
local function optional(name, value, index)
  if value and value ~= '' then put(name, value) elseif v[index] then ndels = ndels + 1; dels[ndels] = name end
end
local function clear_grant()
  optional('holder', false, 2); optional('secret', false, 3); optional('run', false, 4)
  optional('acquired', false, 5); optional('expires', false, 6); optional('attrs', false, 7)
end
local function write()
  if nsets > 0 then redis.call('HSET', KEYS[1], unpack(sets)) end
  if ndels > 0 then redis.call('HDEL', KEYS[1], unpack(dels)) end
end
`;
}
const LOAD_FULL = load(true);
const LOAD_LEAN = load(false);

/**
 * The fence check. ARGV: token, secret, holder, run ('' = null, else '=' .. run), n, then n attribute
 * name/value pairs. \`holds\` is true exactly when fence/verdict.ts#checkFence returns ok; the adapter
 * derives the refusal's reason from the pre-image. \`at\` is the first ARGV index after the fence.
 */
const FENCE = `
local n = tonumber(ARGV[5])
local at = 6 + 2 * n
local holds = holder ~= false and token == ARGV[1] and secret == ARGV[2] and holder == ARGV[3]
if holds then
  if ARGV[4] == '' then holds = not run else holds = (run == string.sub(ARGV[4], 2)) end
end
if holds and n > 0 then
  local attrs = v[7] and cjson.decode(v[7]) or {}
  for i = 6, at - 1, 2 do
    if attrs[ARGV[i]] ~= ARGV[i + 1] then holds = false; break end
  end
end
holds = holds and ((not expires) or now < tonumber(expires))
`;

/**
 * Decimal-string arithmetic on canonical non-negative integers (no leading zeros). Values below 2^53 - 1
 * take the fast path through doubles (exact there); longer ones are handled digit by digit / in chunks
 * of 15 digits (each exact as a double).
 */
const DECIMALS = `
local function dec_inc(s)
  local n = tonumber(s)
  if n < 9007199254740991 then return string.format('%.0f', n + 1) end
  local i = #s
  while i > 0 and string.byte(s, i) == 57 do i = i - 1 end
  if i == 0 then return '1' .. string.rep('0', #s) end
  return string.sub(s, 1, i - 1) .. string.char(string.byte(s, i) + 1) .. string.rep('0', #s - i)
end
local function dec_less(a, b)
  if #a ~= #b then return #a < #b end
  for i = 1, #a, 15 do
    local x, y = tonumber(string.sub(a, i, i + 14)), tonumber(string.sub(b, i, i + 14))
    if x ~= y then return x < y end
  end
  return false
end
`;

/**
 * claim. KEYS: record. ARGV: holder, run ('' | '=' .. run), secret, ttl ms ('' = never), recovering
 * ('1'|'0'), attributes JSON ('' = none). The new token is max(token + 1, floor). A record whose grant
 * already has this secret is a re-delivery of this very claim: nothing changes, the adapter reports it.
 */
export const CLAIM_SCRIPT: string = `${DECIMALS}${LOAD_FULL}
local presented = ARGV[3]
if holder and (secret == presented or (not expires) or now < tonumber(expires)) then return done(0, presented) end
if v[18] == '1' and ARGV[5] ~= '1' then return done(0, presented) end
local next_token = dec_inc(token or '0')
if dec_less(next_token, floor) then next_token = floor end
put('token', next_token); put('holder', ARGV[1]); put('secret', presented); put('acquired', now)
optional('run', ARGV[2] ~= '' and string.sub(ARGV[2], 2), 4)
optional('expires', ARGV[4] ~= '' and (now + tonumber(ARGV[4])), 6)
optional('attrs', ARGV[6], 7)
if holder then
  -- the previous grant expired: it becomes the recorded ending
  put('ending', 'expired'); put('ending_token', token); put('ending_holder', holder); put('ending_at', expires)
  optional('ending_run', run, 11)
  optional('ending_reason', false, 13)
  optional('ending_by', false, 14)
end
write()
return done(1, presented)
`;

/** renew. KEYS: record. ARGV: fence, then ttl ms ('' = never). */
export const RENEW_SCRIPT: string = `${LOAD_LEAN}${FENCE}
if not holds then return done(0, ARGV[2]) end
optional('expires', ARGV[at] ~= '' and (now + tonumber(ARGV[at])), 6)
write()
return done(1, ARGV[2])
`;

/** checkpoint. KEYS: record. ARGV: fence, then the checkpoint JSON. Writing one resolves a pending recovery. */
export const CHECKPOINT_SCRIPT: string = `${LOAD_LEAN}${FENCE}
if not holds then return done(0, ARGV[2]) end
put('checkpoint', ARGV[at]); put('checkpoint_token', token); put('checkpoint_at', now)
optional('recovery', false, 18)
write()
return done(1, ARGV[2])
`;

/** release. KEYS: record. ARGV: fence, then checkpoint mode ('keep' | 'clear' | 'set'), checkpoint JSON. */
export const RELEASE_SCRIPT: string = `${LOAD_LEAN}${FENCE}
if not holds then return done(0, ARGV[2]) end
put('ending', 'released'); put('ending_token', token); put('ending_holder', holder); put('ending_at', now)
optional('ending_run', run, 11)
optional('ending_reason', false, 13)
optional('ending_by', false, 14)
clear_grant()
local mode = ARGV[at]
if mode == 'clear' then
  optional('checkpoint', false, 15); optional('checkpoint_token', false, 16); optional('checkpoint_at', false, 17)
elseif mode == 'set' then
  put('checkpoint', ARGV[at + 1]); put('checkpoint_token', token); put('checkpoint_at', now)
end
write()
return done(1, ARGV[2])
`;

/**
 * revoke. KEYS: record, request memo. ARGV: reason, by, requireRecovery ('1'|'0'), expected token ('' =
 * any), memo TTL ms. The reply is memoised under the request id, so a re-delivered revoke returns the
 * first reply instead of revoking whatever grant came next.
 */
export const REVOKE_SCRIPT: string = `
local memo = redis.call('GET', KEYS[2])
if memo then return cmsgpack.unpack(memo) end
${DECIMALS}${LOAD_LEAN}
local out
if not holder or (ARGV[4] ~= '' and ARGV[4] ~= token) then
  out = done(0, '')
else
  put('token', dec_inc(token)); put('ending', 'revoked'); put('ending_token', token); put('ending_holder', holder)
  put('ending_at', now); put('ending_reason', ARGV[1]); put('ending_by', ARGV[2])
  optional('ending_run', run, 11)
  optional('recovery', ARGV[3] == '1' and v[15] and '1', 18)
  clear_grant()
  write()
  out = done(1, '')
end
redis.call('SET', KEYS[2], cmsgpack.pack(out), 'PX', ARGV[5])
return out
`;

/** recover. KEYS: record. ARGV: fence, then action ('resume' | 'discard'). */
export const RECOVER_SCRIPT: string = `${LOAD_FULL}${FENCE}
if not holds then return done(0, ARGV[2]) end
if ARGV[at] == 'discard' or not v[15] then
  optional('checkpoint', false, 15); optional('checkpoint_token', false, 16); optional('checkpoint_at', false, 17)
else
  put('checkpoint_token', token); put('checkpoint_at', now)
end
optional('recovery', false, 18)
write()
return done(1, ARGV[2])
`;

/** inspect. KEYS: record. Reads the record and the clock together; changes nothing. */
export const INSPECT_SCRIPT: string = `${LOAD_FULL}
return done(0, '')
`;

/**
 * Runs recorded user commands. ARGV from \`at\`: command count, then per command its argument count and
 * arguments, each tagged: 'k' .. i is KEYS[i], 'v' .. text is the text. Stops at the first error reply
 * (Redis has no rollback: the commands before it stay applied) and returns replies, failed index, error.
 */
const RUN_COMMANDS = `
local function run_commands(at)
  local count = tonumber(ARGV[at])
  local replies = {}
  at = at + 1
  for c = 1, count do
    local argc = tonumber(ARGV[at])
    local argv = {}
    for i = 1, argc do
      local arg = ARGV[at + i]
      if string.byte(arg, 1) == 107 then argv[i] = KEYS[tonumber(string.sub(arg, 2))] else argv[i] = string.sub(arg, 2) end
    end
    at = at + argc + 1
    local reply = redis.pcall(unpack(argv))
    if type(reply) == 'table' and reply.err then return replies, c, reply.err end
    replies[c] = reply
  end
  return replies, 0, ''
end
`;

/**
 * fenced write. KEYS: record, request memo, then the user's declared keys. ARGV: fence, memo TTL ms,
 * then the recorded commands. The user's commands run only after the fence check passed, in the same
 * script; a re-delivery (same request id) returns the memoised first reply and runs nothing again.
 * Reply: the lease reply, then { replies, failed command index (0 = none), error }.
 */
export const FENCED_WRITE_SCRIPT: string = `
local memo = redis.call('GET', KEYS[2])
if memo then return cmsgpack.unpack(memo) end
${RUN_COMMANDS}${LOAD_LEAN}${FENCE}
if not holds then return done(0, ARGV[2]) end
local replies, failed, err = run_commands(at + 1)
local out = done(1, ARGV[2])
out[22], out[23], out[24] = replies, failed, err
if tonumber(ARGV[at + 1]) > 0 then redis.call('SET', KEYS[2], cmsgpack.pack(out), 'PX', ARGV[at]) end
return out
`;

/**
 * token gate write. KEYS: gate hash, request memo, then the user's declared keys. ARGV: lease key, token
 * (decimal), memo TTL ms, then the recorded commands. Refuses a token of another lease key or a token
 * lower than the highest that wrote the resource; otherwise records the token and runs the commands.
 * Reply: { status ('ok' | 'key-mismatch' | 'stale-token'), found key, found token, replies, failed, error }.
 */
export const GATE_WRITE_SCRIPT: string = `
local memo = redis.call('GET', KEYS[2])
if memo then return cmsgpack.unpack(memo) end
${DECIMALS}${RUN_COMMANDS}
local found = redis.call('HMGET', KEYS[1], 'key', 'token')
if found[1] and found[1] ~= ARGV[1] then return {'key-mismatch', found[1], found[2]} end
if found[2] and dec_less(ARGV[2], found[2]) then return {'stale-token', found[1], found[2]} end
redis.call('HSET', KEYS[1], 'key', ARGV[1], 'token', ARGV[2])
local replies, failed, err = run_commands(4)
local out = {'ok', found[1], found[2], replies, failed, err}
if tonumber(ARGV[4]) > 0 then redis.call('SET', KEYS[2], cmsgpack.pack(out), 'PX', ARGV[3]) end
return out
`;
