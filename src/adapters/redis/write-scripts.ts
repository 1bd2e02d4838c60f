/**
 * The Lua scripts that run the user's recorded Redis commands: the fenced write (checks the lease's fence,
 * see `scripts.ts`) and the token gate write. Atomic like every script: the check and the commands run
 * with nothing in between, and the commands run only if the check passed.
 */
import { DECIMAL_LESS } from './decimals.js';
import { REINDEX } from './item-index.js';
import { SUBMISSION_RETENTION } from '../../fence/types.js';
import {
  CLOCK,
  FENCED_MEMOISED,
  FENCED_MEMOISED_QUIET,
  MASK_PRESENTED,
  MEMO_FIELDS,
  REFUSE_FENCE,
  REMEMBER,
  REPLAYED,
} from './script-parts.js';

/**
 * Locates the recorded user commands. ARGV from `at`: command count, then per command its argument count
 * (negated when the client's table of known commands accepts it, see `known-commands.ts`) and its arguments as
 * they are sent to Redis (a key by its name, which the client also declared in KEYS). Leaves `commands` (how
 * many), `firsts[c]` and `lasts[c]` (the ARGV range of command c, so that it runs as `unpack(ARGV, first, last)`:
 * no argument is copied or cut in Lua), `counted` (true at the index of each command whose count the table
 * accepted) and `pos` (the last command's last ARGV).
 */
const decodeCommands = (at: string): string => `
local firsts, lasts, counted = {}, {}, {}
local pos = ${at}
local commands = tonumber(ARGV[pos])
for c = 1, commands do
  local argc = tonumber(ARGV[pos + 1])
  if argc < 0 then argc, counted[c] = -argc, true end
  firsts[c], lasts[c] = pos + 2, pos + 1 + argc
  pos = pos + argc + 1
end
`;

/**
 * Checks every decoded command before any runs, so that what can be known up front fails with nothing
 * applied: an unknown command, a wrong argument count, a command scripts may not run, an ACL denial.
 * Leaves `failed` (1-based index, 0 = none) and `err`. A single command is not checked: if it fails,
 * nothing was applied anyway (and `COMMAND INFO` costs the server ~14 µs per command). A command whose
 * count the client's table accepted (`counted`) skips `COMMAND INFO` on Redis 7+: `redis.acl_check_cmd`
 * alone raises for a name the server does not know (renamed) and answers false for an ACL denial.
 */
const CHECK_COMMANDS = `
local failed, err, known = 0, '', {}
local acl = redis.acl_check_cmd
for c = 1, (commands > 1 and commands or 0) do
  local argv = {unpack(ARGV, firsts[c], lasts[c])}
  local name = string.lower(argv[1])
  if counted[c] and acl then
    local ok, allowed = pcall(acl, unpack(argv))
    if not ok then
      failed, err = c, 'ERR unknown command ' .. name
    elseif not allowed then
      failed, err = c, 'NOPERM the user may not run ' .. name
    end
  else
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
      if failed == 0 and acl and not acl(unpack(argv)) then
        failed, err = c, 'NOPERM the user may not run ' .. name
      end
    end
  end
  if failed > 0 then break end
end
`;

/**
 * Runs the checked commands in order. Stops at the first error reply: Redis has no rollback, so the
 * commands before it stay applied (`applied`). Leaves `replies`, `failed`, `err`, `applied`.
 */
const RUN_COMMANDS = `
local replies, applied = {}, 0
for c = 1, commands do
  local result = redis.pcall(unpack(ARGV, firsts[c], lasts[c]))
  if type(result) == 'table' and result.err then failed, err = c, result.err; break end
  replies[c] = result
  applied = c
end
`;

/**
 * The start of a fenced write, before its fence (spliced into the fence check, see `FENCED_MEMOISED_QUIET`):
 * decodes the recorded commands (ARGV from `at + 1`, after the checkpoint JSON), then reads the write's
 * extras, which follow the commands and are absent on the hot path (no ARGV is added there): the
 * submission's run id ('' = none) and, with one, its digest and receipt JSON ('' = none), then the
 * conditions (see CONDITIONS). KEYS[2] is the submissions hash when there is a run id: a run id recorded
 * there is answered with the fence refusal's reply plus the stored submission at `REPLY.extras` (the core
 * answers `replayed`, `replay-conflict` or the fence's refusal), and nothing is written. Leaves `commands`,
 * `counted`, `pos` (the last command's last ARGV), `run`, `submitted` and `cond` (the index of the
 * conditions' count).
 */
const START = `${decodeCommands('at + 1')}
local run, cond = ARGV[pos + 1], pos + 2
local submitted = run ~= nil and run ~= ''
if submitted then
  cond = pos + 4
  local found = redis.call('HGET', KEYS[2], 'r:' .. run)
  if found then
    ${MASK_PRESENTED}
    ${REFUSE_FENCE('found')}
  end
end
`;

/**
 * The write's conditions (`RedisWriteContext.refuseUnless` and `refuse`), judged once the fence holds and
 * before any recorded command is checked or runs. ARGV from `cond` (absent: none): their count, then per
 * condition its argument count (0: refuse unconditionally), its arguments (a read command, as
 * `decodeCommands` reads a command), the mode ('=': the reply must equal, '!': must differ) and the expected reply ('' = nil,
 * 's' .. text = a bulk string, 'i' .. digits = an integer). The first condition not met answers `{ status,
 * {}, 0, '', 0, its index }` (`WRITTEN.refused`) with nothing written.
 */
const CONDITIONS = `
if ARGV[cond] then
  local p = cond
  for c = 1, tonumber(ARGV[p]) do
    local argc = tonumber(ARGV[p + 1])
    local met = false
    if argc > 0 then
      local got = redis.call(unpack(ARGV, p + 2, p + 1 + argc))
      local want = ARGV[p + argc + 3]
      local tag = string.byte(want, 1)
      local same = (tag == nil and got == false) or (tag == 115 and got == string.sub(want, 2)) or (tag == 105 and got == tonumber(string.sub(want, 2)))
      met = (ARGV[p + argc + 2] == '=') == same
    end
    if not met then return {'+' .. clock, {}, 0, '', 0, c} end
    p = p + argc + 3
  end
end
`;

/**
 * Records the write's submission (after its commands ran without a failure): `r:` .. run and the `order`
 * index in KEYS[2], forgetting the oldest beyond the newest `SUBMISSION_RETENTION`. Stored: digest SEP token
 * SEP holder SEP run SEP at SEP receipt (see `scripts.ts`).
 */
const RECORD_SUBMISSION = `
local order = redis.call('HGET', KEYS[2], 'order') or ''
local kept, cut, evicted = 0, 1, {}
for _ in string.gmatch(order, '%z') do kept = kept + 1 end
while kept >= ${SUBMISSION_RETENTION} do
  local stop = string.find(order, '\\0', cut, true)
  evicted[#evicted + 1] = 'r:' .. string.sub(order, cut, stop - 1)
  cut, kept = stop + 1, kept - 1
end
if #evicted > 0 then redis.call('HDEL', KEYS[2], unpack(evicted)) end
redis.call('HSET', KEYS[2], 'r:' .. run, ARGV[pos + 2] .. '\\0' .. ARGV[1] .. '\\0' .. ARGV[3] .. now_ms .. '\\0' .. ARGV[pos + 3], 'order', string.sub(order, cut) .. run .. '\\0')
`;

/** Where the parts of an applied fenced write's reply sit (0-based; see `FENCED_WRITE_SCRIPT`). */
export const WRITTEN = { status: 0, replies: 1, failed: 2, error: 3, applied: 4, refused: 5 } as const;

/**
 * fenced write. KEYS: record, the submissions hash when the write carries a submission, then the user's
 * declared keys. ARGV: fence, request id, replay window ms, checkpoint JSON ('' = none), the recorded
 * commands, then (only when there is one or the other) the submission and the conditions (see START). In
 * this order: a re-delivery returns its first reply (see FENCED_MEMOISED); a recorded run id answers its
 * submission (START, before the fence, as the core does); the fence; the conditions; the commands are
 * checked (CHECK_COMMANDS) and run; then, if none failed, the checkpoint is saved exactly as
 * CHECKPOINT_SCRIPT saves it (stamped with the token, resolving a pending recovery) and the submission is
 * recorded, so the write, the progress and the submission apply together. Memoised when it recorded a
 * command, a checkpoint or a submission: a re-delivery returns the first reply and runs nothing again.
 * Reply: a refusal is the lease reply of a fenced script (see `scripts.ts`); otherwise `WRITTEN`: status and
 * clock only (the script proved the fence), then replies, failed command index (0 = none), error, how many
 * commands were applied, and the index of the condition that refused the write (absent when none did). A
 * condition not met or a command found wrong before any ran (see CHECK_COMMANDS) applies nothing, the
 * checkpoint and the submission included; a command failing while it runs leaves the ones before it applied
 * and saves neither (Redis cannot roll a script back).
 */
export const FENCED_WRITE_SCRIPT: string = `${FENCED_MEMOISED_QUIET(START)}${CONDITIONS}${CHECK_COMMANDS}
if failed > 0 then return {'+' .. clock, {}, failed, err, 0} end
${RUN_COMMANDS}
local reply = {'+' .. clock, replies, failed, err, applied}
if commands > 0 or ARGV[at] ~= '' or submitted then
  ${REMEMBER}
  if failed == 0 and submitted then
    ${RECORD_SUBMISSION}
  end
  if failed == 0 and ARGV[at] ~= '' then
    redis.call('HSET', KEYS[1], 'checkpoint', ARGV[1] .. '\\0' .. now_ms .. '\\0' .. ARGV[at], 'recovery', '', ${MEMO_FIELDS})
    ${REINDEX('KEYS[1]', 'item')}
  else
    redis.call('HSET', KEYS[1], ${MEMO_FIELDS})
  end
end
return reply
`;

/**
 * The gate check (after the fence check, when there is one). Given the gate hash `gate`, the writer's lease
 * key `writer` and token `token` (decimal): returns `refused(reason)` (a Lua expression template, with
 * `found` read) for a token of another lease key or a token lower than the highest that wrote the
 * resource. Leaves `found` (key, token) for the reply.
 */
const gateCheck = (gate: string, writer: string, token: string, refused: (reason: string) => string): string => `
local found = redis.call('HMGET', ${gate}, 'key', 'token')
if found[1] and found[1] ~= ${writer} then return ${refused("'key-mismatch'")} end
if found[2] then
  local a, b = ${token}, found[2]
  ${DECIMAL_LESS}
  if less then return ${refused("'stale-token'")} end
end
`;

/**
 * token gate write with the full fence. KEYS: the writer's lease record, the gate hash, then the user's
 * declared keys. ARGV: fence (see FENCED), request id, replay window ms, the writer's lease key, then the
 * recorded commands. The fence is checked first (a refusal is the fenced scripts' refusal), then the gate
 * (see `gateCheck`); then the commands run and the token is recorded, all in this one script. Memoised in
 * the lease record (see FENCED_MEMOISED). Reply: the lease reply (see `scripts.ts`) padded to
 * `REPLY.extras`, then status ('ok' | 'key-mismatch' | 'stale-token'), found key, found token, replies,
 * failed, error, applied.
 */
export const FENCED_GATE_WRITE_SCRIPT: string = `${FENCED_MEMOISED}${gateCheck('KEYS[2]', 'ARGV[at]', 'ARGV[1]', (reason) => `{'+' .. clock, shown, false, false, false, false, false, ${reason}, found[1], found[2]}`)}
${decodeCommands('at + 1')}${CHECK_COMMANDS}
if failed > 0 then return {'+' .. clock, shown, false, false, false, false, false, 'ok', found[1], found[2], {}, failed, err, 0} end
${RUN_COMMANDS}
local reply = {'+' .. clock, shown, false, false, false, false, false, 'ok', found[1], found[2], replies, failed, err, applied}
${REMEMBER}
redis.call('HSET', KEYS[2], 'key', ARGV[at], 'token', ARGV[1])
redis.call('HSET', KEYS[1], ${MEMO_FIELDS})
return reply
`;

/** token gate inspect. KEYS: gate hash. Replies { key, token } (false when nothing); changes nothing. */
export const GATE_INSPECT_SCRIPT: string = `return redis.call('HMGET', KEYS[1], 'key', 'token')`;

/**
 * token gate reset. KEYS: gate hash. ARGV: expected token (decimal, '' for any), expected key ('' for any).
 * Forgets the resource (its highest token and memos) only if it records the expected token and key, judged
 * and deleted in this one script. Reply: { deleted (1 or 0), key, token } as they were (false when nothing).
 */
export const GATE_RESET_SCRIPT: string = `
local found = redis.call('HMGET', KEYS[1], 'key', 'token')
if ARGV[1] ~= '' and (found[2] ~= ARGV[1] or (ARGV[2] ~= '' and found[1] ~= ARGV[2])) then
  return {0, found[1], found[2]}
end
redis.call('DEL', KEYS[1])
return {1, found[1], found[2]}
`;

/**
 * token gate write, tokens only (for leases kept in another store). KEYS: gate hash, then the user's declared keys. ARGV: lease key, token (decimal),
 * request id, replay window ms, then the recorded commands. Refuses a token of another lease key or a
 * token lower than the highest that wrote the resource; otherwise runs the commands and records the
 * token. Memoised in the gate hash like a fenced write (see REMEMBER).
 * Reply: { status ('ok' | 'key-mismatch' | 'stale-token'), found key, found token, replies, failed,
 * error, applied }.
 */
export const GATE_WRITE_SCRIPT: string = `${CLOCK}
local memos = redis.call('HGET', KEYS[1], 'memos') or ''
local request, window = ARGV[3], tonumber(ARGV[4])
${REPLAYED('KEYS[1]')}${gateCheck('KEYS[1]', 'ARGV[1]', 'ARGV[2]', (reason) => `{${reason}, found[1], found[2]}`)}${decodeCommands('5')}${CHECK_COMMANDS}
if failed > 0 then return {'ok', found[1], found[2], {}, failed, err, 0} end
${RUN_COMMANDS}
local reply = {'ok', found[1], found[2], replies, failed, err, applied}
${REMEMBER}
redis.call('HSET', KEYS[1], 'key', ARGV[1], 'token', ARGV[2], ${MEMO_FIELDS})
return reply
`;
