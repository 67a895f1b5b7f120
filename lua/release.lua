-- Gives back what msgs claimed, many in one call (SPEC §5: a send refused later in the
-- chain, or whose provider failed, consumes nothing).
-- KEYS[k]   a counter hash (claim.lua) or a duplicate-content mark (suppression.lua)
-- ARGV      per item: "c", tail, n, fields...  removes the entries this very attempt added
--                     (tail: member digest × 65536 + attempt token) from the named caps
--           or        "m", value              deletes the mark if this attempt made it (its value:
--                                             messageId, NUL, token; a bare messageId before tokens)
-- Returns { per item: how many claims were given back }. A mark or entry of another msg,
-- or of another attempt of the same msg, is left alone.
-- @include counter_entries
local out = {}
local pos = 1
for k = 1, #KEYS do
  local key = KEYS[k]
  local given = 0
  if ARGV[pos] == 'm' then
    if redis.call('GET', key) == ARGV[pos + 1] then given = redis.call('DEL', key) end
    pos = pos + 2
  else
    local tail, n = struct.pack('>I6', tonumber(ARGV[pos + 1])), tonumber(ARGV[pos + 2])
    local fields = {}
    for i = 1, n do fields[i] = ARGV[pos + 2 + i] end
    pos = pos + 3 + n
    local values = redis.call('HMGET', key, unpack(fields))
    for i = 1, n do
      local v = values[i]
      if v then
        local left, p, removed = {}, 1, 0
        local at = findEntry(v, p, tail, STAMP)
        while at do
          left[#left + 1] = string.sub(v, p, at - 1)
          removed = removed + 1
          p = at + ENTRY
          at = findEntry(v, p, tail, STAMP)
        end
        if removed > 0 then
          left[#left + 1] = string.sub(v, p)
          local rest = table.concat(left)
          given = given + removed
          if #rest == 0 then redis.call('HDEL', key, fields[i]) else redis.call('HSET', key, fields[i], rest) end
        end
      end
    end
  end
  out[k] = given
end
return out
