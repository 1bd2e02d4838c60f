/**
 * Lua fragments the scripts in `scripts.ts` and `write-scripts.ts` are built from: straight-line code
 * spliced into each script (no per-call closures), reading and naming the parts of the record described
 * in `scripts.ts`.
 */

/**
 * Reads the clock once: `clock` is epoch µs as decimal text (the token floor), `now_ms` epoch ms as text,
 * `now` the same as a number. Built from `TIME`'s two parts as text: no number-to-text conversion.
 */
export const CLOCK: string = `
local t = redis.call('TIME')
local clock = t[1] .. string.sub('00000', #t[2]) .. t[2]
local now_ms = string.sub(clock, 1, -4)
local now = tonumber(now_ms)
`;

/**
 * Makes the stored checkpoint in the local `checkpoint` safe to reply: a value that is not token SEP
 * writtenAt SEP text-without-NUL (written by something else than leasefence, or damaged) is replied as
 * '0' SEP '0' SEP its text (NUL shown as U+FFFD), so that it can never shift the parts of a reply; the
 * adapter reports it as a checkpoint with token 0 (unstamped). The stored value is not changed: an
 * operator inspects it and clears it (release with a checkpoint decision, recover 'discard').
 */
export const SAFE_CHECKPOINT: string = `
if checkpoint and checkpoint ~= '' then
  local c1 = string.find(checkpoint, '\\0', 1, true)
  local c2 = c1 and string.find(checkpoint, '\\0', c1 + 1, true)
  if not (c2 and string.find(string.sub(checkpoint, 1, c2), '^%d+%z%d+%z$') and not string.find(checkpoint, '\\0', c2 + 1, true)) then
    checkpoint = '0\\0' .. '0\\0' .. (string.gsub(checkpoint, '%z', '\\239\\191\\189'))
  end
end
`;

/** The locals `GRANT_PARTS` sets, declared where the script needs them. */
export const GRANT_LOCALS: string = 'local s2, s4, s5, expires';

/**
 * Given `lease` holding a grant and `s1`, the position of its first SEP: sets the positions `s2` (after
 * the secret), `s4` (after the run) and `s5` (after expires), and `expires` (see `GRANT_LOCALS`).
 */
export const GRANT_PARTS: string = `
s2 = string.find(lease, '\\0', s1 + 1, true)
s4 = string.find(lease, '\\0', string.find(lease, '\\0', s2 + 1, true) + 1, true)
s5 = string.find(lease, '\\0', s4 + 1, true)
expires = string.sub(lease, s4 + 1, s5 - 1)
`;

/** After `GRANT_PARTS`: the lease field with the grant's secret replaced by `''` (an expression). */
export const MASKED: string = `string.sub(lease, 1, s1) .. string.sub(lease, s2)`;

/** After `GRANT_PARTS`: the ending of the expired grant that a claim takes over (an expression). */
export const TAKE_OVER: string = `'expired\\0' .. string.sub(lease, 1, s1) .. string.sub(lease, s2 + 1, s4) .. expires .. '\\0\\0'`;

/** How many memoised replies a record keeps (see `REMEMBER`). */
export const REPLAY_SLOTS = 8;

/**
 * Given `memos` (the record's `memos` field, `''` when absent: the index of its memoised replies),
 * `request` (a request id: always 32 hexadecimal characters), `window` (ms) and `now`: a re-delivery of a
 * request remembered within the window returns its first reply (the field `'m' .. slot` of `key`), and changes
 * nothing. The index is a run of 48-character entries, request id (32) .. at ms (15 digits) .. slot (one digit,
 * 0 to `REPLAY_SLOTS - 1`), oldest first: one `string.find`, no walk. Only an aligned match is an entry (at
 * digits, slots and ids are all hexadecimal text).
 */
export const REPLAYED = (key: string): string => `
local found = string.find(memos, request, 1, true)
while found and found % 48 ~= 1 do found = string.find(memos, request, found + 1, true) end
if found and now - tonumber(string.sub(memos, found + 32, found + 46)) < window then
  -- NOTE: the index and the reply are written together; a missing reply fails the script
  -- (cmsgpack.unpack(false) raises) rather than run the request again.
  return cmsgpack.unpack(redis.call('HGET', ${key}, 'm' .. string.sub(memos, found + 47, found + 47)))
end
`;

/**
 * Given `memos`, `request`, `window`, `now` and `reply` (see `REPLAYED`): drops the oldest entries that are out
 * of the window or beyond `REPLAY_SLOTS - 1` from the index, and sets `memos_after` (the new index), `memo_slot`
 * and `memo` (this reply, cmsgpack-packed): the caller writes `MEMO_FIELDS` in its HSET. The replies live in
 * `REPLAY_SLOTS` fields of the record, `m0` to `m7`, used in turn: an entry's slot is the one after the newest
 * entry's, so the entries kept (at most `REPLAY_SLOTS - 1`, in consecutive slots) never lose theirs, and a
 * dropped entry's reply is simply overwritten later (no HDEL, no field name built from the request). So memos
 * live in the record they protect (no key per request), at most `REPLAY_SLOTS` per key, and a write reads and
 * rewrites one short index, not the replies.
 */
export const REMEMBER: string = `
local count, drop = #memos / 48, 0
while drop < count and (count - drop >= ${REPLAY_SLOTS} or now - tonumber(string.sub(memos, drop * 48 + 33, drop * 48 + 47)) >= window) do
  drop = drop + 1
end
local memo_slot = count > 0 and (string.byte(memos, -1) - 47) % ${REPLAY_SLOTS} or 0
-- NOTE: the at stamp is now_ms zero-padded to 15 digits, the text string.format('%015.0f', now) gives
-- (now_ms has no leading zero), at a third of its cost.
local memos_after = string.sub(memos, drop * 48 + 1) .. request .. string.sub('000000000000000', #now_ms + 1) .. now_ms .. memo_slot
local memo = cmsgpack.pack(reply)
`;

/** After `REMEMBER`: the field/value pairs to add to the script's HSET (the index and this reply). */
export const MEMO_FIELDS = `'memos', memos_after, 'm' .. memo_slot, memo`;

/** After the fence's ARGV (`at`) and `read`: the request id, the replay window and `memos`, then `REPLAYED`. */
const MEMOS = `
local request, window = ARGV[at], tonumber(ARGV[at + 1])
at = at + 2
local memos = read[2] or ''
${REPLAYED('KEYS[1]')}`;

/**
 * Given `lease` (the stored field, or false) and `hashed` (the presented secret's stored form): replaces the
 * grant's secret part of `lease` by `'='` when it matches the presented one, else by `''`, for a reply.
 */
export const MASK_PRESENTED: string = `
local s1 = lease and string.find(lease, '\\0', 1, true)
if s1 then
  local s2 = string.find(lease, '\\0', s1 + 1, true)
  local stored = string.sub(lease, s1 + 1, s2 - 1)
  lease = string.sub(lease, 1, s1) .. (stored == hashed and '=' or '') .. string.sub(lease, s2)
end
`;

/**
 * After `MASK_PRESENTED`: returns what explains a refused fence, the lease and the ending (the table reply of
 * `scripts.ts`), and the key state when there is one (a grant ended `state-changed` is refused naming the value
 * now); `extra` (a Lua expression) goes at `REPLY.extras`.
 */
export const REFUSE_FENCE = (extra?: string): string => `
local why = redis.call('HMGET', KEYS[1], 'ending', 'state')
${
  extra === undefined
    ? `if why[2] and why[2] ~= '' then return {'-' .. clock, lease, why[1], false, false, why[2]} end
return {'-' .. clock, lease, why[1]}`
    : `return {'-' .. clock, lease, why[1], false, false, why[2], false, ${extra}}`
}
`;

/**
 * The fence check and refusal of every fenced script. ARGV: token, secret, who (holder SEP run SEP), then
 * n and n attribute name/value pairs (n may be left out when it is 0 and nothing follows); `at` is the
 * first ARGV index after them. The fence holds (exactly when fence/verdict.ts#checkFence returns ok) when
 * token SEP hashed secret SEP who (`prefix`) starts the lease field, the required attributes match and
 * the grant has not expired; `e` is then the position of the SEP after expires, in `lease`. `shown`
 * (unless `shows` is false) is the field as replied (secret part `'='`). When the fence does not hold,
 * the script returns the lease (secret part `'='` if it matches the presented one, else `''`), the
 * ending and the key state (`REFUSE_FENCE`), which explain the refusal, and changes nothing.
 * `beforeFence` runs after the replay lookup of a memoised script and before the fence is judged (a
 * fenced write's submission lookup, see `write-scripts.ts`). `item` is the record's `item` field, read with the
 * lease for the scripts that re-index an item after their write (`item-index.ts`); renew and release also read
 * `watched` (`read[3]`: release publishes only while someone watches, `freed-interest.ts`).
 */
const fencedCheck = (memoised: boolean, shows = true, beforeFence = ''): string => `${CLOCK}
${memoised ? "local read = redis.call('HMGET', KEYS[1], 'lease', 'memos', 'item')\nlocal lease, item = read[1], read[3]" : "local read = redis.call('HMGET', KEYS[1], 'lease', 'item', 'watched')\nlocal lease, item = read[1], read[2]"}
local n = tonumber(ARGV[4]) or 0
local at = 5 + 2 * n
${memoised ? MEMOS : ''}
local hashed = '#' .. redis.sha1hex(ARGV[2])
local prefix = ARGV[1] .. '\\0' .. hashed .. '\\0' .. ARGV[3]
${beforeFence}
-- NOTE: a plain find anchored by '== 1' compares the prefix without copying it out of the field.
local e = lease and string.find(lease, prefix, 1, true) == 1 and string.find(lease, '\\0', #prefix + 1, true)
local holds = false
if e then
  local expires = string.sub(lease, #prefix + 1, e - 1)
  holds = expires == '' or now < tonumber(expires)
  if holds and n > 0 then
    local attrs = string.sub(lease, string.find(lease, '\\0', e + 1, true) + 1)
    attrs = attrs ~= '' and cjson.decode(attrs) or {}
    for i = 5, 4 + 2 * n, 2 do
      if attrs[ARGV[i]] ~= ARGV[i + 1] then holds = false; break end
    end
  end
end
if not holds then
  ${MASK_PRESENTED}
  ${REFUSE_FENCE()}
end
${shows ? "local shown = ARGV[1] .. '\\0=\\0' .. ARGV[3] .. string.sub(lease, #prefix + 1)" : ''}
`;

/** The fence check of renew and release (see `fencedCheck`). */
export const FENCED: string = fencedCheck(false);

/**
 * The fence check of memoised operations (checkpoint, recover, fenced write): ARGV after the fence starts
 * with the request id and the replay window ms (`at` is after them), and a re-delivery of the request
 * returns its first reply (`REPLAYED`) before the fence is checked. Only an applied reply is memoised: a
 * refusal stays a refusal when re-evaluated, since a grant never becomes current again.
 */
export const FENCED_MEMOISED: string = fencedCheck(true);

/**
 * `FENCED_MEMOISED` without `shown`, with `beforeFence` (see `fencedCheck`): for the fenced write, whose
 * applied reply carries no pre-image.
 */
export const FENCED_MEMOISED_QUIET = (beforeFence: string): string => fencedCheck(true, false, beforeFence);
