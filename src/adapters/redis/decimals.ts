/**
 * Lua fragments for decimal-string arithmetic on canonical non-negative integers (no leading zeros), the
 * form tokens take inside scripts: Lua numbers are doubles, exact only up to 2^53. Straight-line code to
 * splice into a script (no per-call closures).
 */

/** Sets the Lua local `target` to the decimal string `source` + 1, exactly at any size. */
export const increment = (target: string, source: string): string => `
local ${target}
if tonumber(${source}) < 9007199254740991 then
  ${target} = string.format('%.0f', tonumber(${source}) + 1)
else
  local i = #${source}
  while i > 0 and string.byte(${source}, i) == 57 do i = i - 1 end
  if i == 0 then ${target} = '1' .. string.rep('0', #${source})
  else ${target} = string.sub(${source}, 1, i - 1) .. string.char(string.byte(${source}, i) + 1) .. string.rep('0', #${source} - i) end
end
`;

/** Sets the Lua local `less` to whether decimal string `a` < `b` (both Lua locals), in exact 15-digit chunks. */
export const DECIMAL_LESS: string = `
local less = false
if #a ~= #b then less = #a < #b
else
  for i = 1, #a, 15 do
    local x, y = tonumber(string.sub(a, i, i + 14)), tonumber(string.sub(b, i, i + 14))
    if x ~= y then less = x < y; break end
  end
end
`;
