/**
 * The Lua scripts that run the user's recorded Redis commands: the fenced write (checks the lease's fence,
 * see `scripts.ts`) and the token gate write. Atomic like every script: the check and the commands run
 * with nothing in between, and the commands run only if the check passed.
 */
import { DECIMAL_LESS } from './decimals.js';
import { FENCED } from './script-parts.js';

/**
 * Runs recorded user commands. ARGV from \`at\`: command count, then per command its argument count and
 * arguments, each tagged: 'k' .. i is KEYS[i], 'v' .. text is the text. Stops at the first error reply
 * (Redis has no rollback: the commands before it stay applied). Leaves \`replies\`, \`failed\` (1-based
 * index, 0 = none) and \`err\`.
 */
const runCommands = (at: string): string => `
local replies, failed, err = {}, 0, ''
local pos = ${at}
for c = 1, tonumber(ARGV[pos]) do
  local argc = tonumber(ARGV[pos + 1])
  local argv = {}
  for i = 1, argc do
    local arg = ARGV[pos + 1 + i]
    if string.byte(arg, 1) == 107 then argv[i] = KEYS[tonumber(string.sub(arg, 2))] else argv[i] = string.sub(arg, 2) end
  end
  pos = pos + argc + 1
  local result = redis.pcall(unpack(argv))
  if type(result) == 'table' and result.err then failed, err = c, result.err; break end
  replies[c] = result
end
`;

/**
 * fenced write. KEYS: record, request memo, then the user's declared keys. ARGV: fence, memo TTL ms,
 * checkpoint JSON ('' = none), then the recorded commands. The user's commands run only after the fence
 * check passed, in the same script; then, if none failed, the checkpoint is saved exactly as
 * CHECKPOINT_SCRIPT saves it (stamped with the token, resolving a pending recovery), so the write and
 * the progress it records apply together. A re-delivery (same request id) returns the memoised first
 * reply and runs nothing again.
 * Reply: the lease reply of a fenced script (see `scripts.ts`), padded to `REPLY.extras`, then replies,
 * failed command index (0 = none), error.
 */
export const FENCED_WRITE_SCRIPT: string = `
local memo = redis.call('GET', KEYS[2])
if memo then return cmsgpack.unpack(memo) end
${FENCED}${runCommands('at + 2')}
if failed == 0 and ARGV[at + 1] ~= '' then
  redis.call('HSET', KEYS[1], 'checkpoint', ARGV[1] .. '\\0' .. now_ms .. '\\0' .. ARGV[at + 1], 'recovery', '')
end
local reply = {'+' .. clock, lease, false, false, false, replies, failed, err}
if tonumber(ARGV[at + 2]) > 0 or ARGV[at + 1] ~= '' then redis.call('SET', KEYS[2], cmsgpack.pack(reply), 'PX', ARGV[at]) end
return reply
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
local found = redis.call('HMGET', KEYS[1], 'key', 'token')
if found[1] and found[1] ~= ARGV[1] then return {'key-mismatch', found[1], found[2]} end
if found[2] then
  local a, b = ARGV[2], found[2]
  ${DECIMAL_LESS}
  if less then return {'stale-token', found[1], found[2]} end
end
redis.call('HSET', KEYS[1], 'key', ARGV[1], 'token', ARGV[2])
${runCommands('4')}
local out = {'ok', found[1], found[2], replies, failed, err}
if tonumber(ARGV[4]) > 0 then redis.call('SET', KEYS[2], cmsgpack.pack(out), 'PX', ARGV[3]) end
return out
`;
