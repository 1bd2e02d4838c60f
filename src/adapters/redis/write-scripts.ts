/**
 * The Lua scripts that run the user's recorded Redis commands: the fenced write (checks the lease's fence,
 * see `scripts.ts`) and the token gate write. Atomic like every script: the check and the commands run
 * with nothing in between, and the commands run only if the check passed.
 */
import { DECIMAL_LESS } from './decimals.js';
import { FENCED } from './script-parts.js';

/**
 * Decodes the recorded user commands. ARGV from \`at\`: command count, then per command its argument
 * count and arguments, each tagged: 'k' .. i is KEYS[i], 'v' .. text is the text. Leaves \`commands\`
 * (a list of argument lists).
 */
const decodeCommands = (at: string): string => `
local commands = {}
local pos = ${at}
for c = 1, tonumber(ARGV[pos]) do
  local argc = tonumber(ARGV[pos + 1])
  local argv = {}
  for i = 1, argc do
    local arg = ARGV[pos + 1 + i]
    if string.byte(arg, 1) == 107 then argv[i] = KEYS[tonumber(string.sub(arg, 2))] else argv[i] = string.sub(arg, 2) end
  end
  pos = pos + argc + 1
  commands[c] = argv
end
`;

/**
 * Checks every decoded command before any runs, so that what can be known up front fails with nothing
 * applied: an unknown command, a wrong argument count, a command scripts may not run, an ACL denial.
 * Leaves \`failed\` (1-based index, 0 = none) and \`err\`.
 */
const CHECK_COMMANDS = `
local failed, err, known = 0, '', {}
for c = 1, #commands do
  local argv = commands[c]
  local name = string.lower(argv[1])
  if known[name] == nil then known[name] = redis.call('COMMAND', 'INFO', name)[1] or false end
  local info = known[name]
  if not info then
    failed, err = c, 'ERR unknown command ' .. name
  elseif (info[2] >= 0 and #argv ~= info[2]) or (info[2] < 0 and #argv < -info[2]) then
    failed, err = c, 'ERR wrong number of arguments for ' .. name
  else
    for _, flag in ipairs(info[3]) do
      if flag.ok == 'noscript' then failed, err = c, 'ERR ' .. name .. ' is not allowed in scripts' end
    end
    if failed == 0 and redis.acl_check_cmd and not redis.acl_check_cmd(unpack(argv)) then
      failed, err = c, 'NOPERM the user may not run ' .. name
    end
  end
  if failed > 0 then break end
end
`;

/**
 * Runs the checked commands in order. Stops at the first error reply: Redis has no rollback, so the
 * commands before it stay applied (\`applied\`). Leaves \`replies\`, \`failed\`, \`err\`, \`applied\`.
 */
const RUN_COMMANDS = `
local replies, applied = {}, 0
for c = 1, #commands do
  local result = redis.pcall(unpack(commands[c]))
  if type(result) == 'table' and result.err then failed, err = c, result.err; break end
  replies[c] = result
  applied = c
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
 * failed command index (0 = none), error, how many commands were applied. A command found wrong before
 * any ran (see CHECK_COMMANDS) applies nothing, the checkpoint included; a command failing while it
 * runs leaves the ones before it applied and saves no checkpoint (Redis cannot roll a script back).
 */
export const FENCED_WRITE_SCRIPT: string = `
local memo = redis.call('GET', KEYS[2])
if memo then return cmsgpack.unpack(memo) end
${FENCED}${decodeCommands('at + 2')}${CHECK_COMMANDS}
if failed > 0 then return {'+' .. clock, shown, false, false, false, {}, failed, err, 0} end
${RUN_COMMANDS}
if failed == 0 and ARGV[at + 1] ~= '' then
  redis.call('HSET', KEYS[1], 'checkpoint', ARGV[1] .. '\\0' .. now_ms .. '\\0' .. ARGV[at + 1], 'recovery', '')
end
local reply = {'+' .. clock, shown, false, false, false, replies, failed, err, applied}
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
${decodeCommands('4')}${CHECK_COMMANDS}
if failed > 0 then return {'ok', found[1], found[2], {}, failed, err, 0} end
redis.call('HSET', KEYS[1], 'key', ARGV[1], 'token', ARGV[2])
${RUN_COMMANDS}
local out = {'ok', found[1], found[2], replies, failed, err, applied}
if tonumber(ARGV[4]) > 0 then redis.call('SET', KEYS[2], cmsgpack.pack(out), 'PX', ARGV[3]) end
return out
`;
