-- Gives back what msgs claimed, many in one call (SPEC §5: a send refused later in the
-- chain, or whose provider failed, consumes nothing).
-- KEYS[k]   a counter hash (claim.lua) or a duplicate-content mark (suppression.lua)
-- ARGV      per item: "c", tail, n, fields...  removes the entries this very attempt added
--                     (tail: member digest × 65536 + attempt token) from the named caps
--           or        "m", value              takes this attempt's token off the mark (its value:
--                                             messageId, then NUL and a token per attempt holding it:
--                                             suppression.lua), deleting the mark with the last; a
--                                             bare messageId (before tokens) only when given bare
-- Returns { per item: how many claims it gave back, how many it handed to another attempt
-- of the same msg (left in place, that attempt's now) }. A mark or entry of another msg,
-- or of another attempt of the same msg, is left alone.
-- @include counter_entries
local out = {}
local pos = 1
for k = 1, #KEYS do
  local key = KEYS[k]
  local given, handed = 0, 0
  if ARGV[pos] == 'm' then
    local held, value = redis.call('GET', key), ARGV[pos + 1]
    local sep = string.find(value, '\0', 1, true)
    if held == value then
      given = redis.call('DEL', key)
    elseif held and sep and string.sub(held, 1, sep) == string.sub(value, 1, sep) then
      -- the tokens between NULs, one of them this attempt's
      local tokens = string.sub(held, sep) .. '\0'
      local from, to = string.find(tokens, string.sub(value, sep) .. '\0', 1, true)
      if from then
        local rest = string.sub(tokens, 1, from) .. string.sub(tokens, to + 1)
        rest = string.sub(rest, 2, #rest - 1)
        if #rest == 0 then
          given = redis.call('DEL', key)
        else
          redis.call('SET', key, string.sub(value, 1, sep) .. rest, 'KEEPTTL')
          handed = 1
        end
      end
    end
    pos = pos + 2
  else
    local tail, n = struct.pack('>I6', tonumber(ARGV[pos + 1])), tonumber(ARGV[pos + 2])
    local digest = string.sub(tail, 1, 4)
    -- the counters, then their co-holder lists, in one read
    local fields, cos, names = {}, {}, {}
    for i = 1, n do
      fields[i] = ARGV[pos + 2 + i]
      cos[i] = fields[i] .. CO
      names[i], names[n + i] = fields[i], cos[i]
    end
    pos = pos + 3 + n
    local values = redis.call('HMGET', key, unpack(names))
    for i = 1, n do
      local v, list = values[i], values[n + i]
      local listChanged = false
      -- this attempt held another's entry: it lets go of it, and the entry stays
      if list then
        local at = findTail(list, tail)
        if at then
          list = string.sub(list, 1, at - 1) .. string.sub(list, at + TAIL)
          listChanged = true
        end
      end
      if v then
        local left, p, removed = {}, 1, 0
        local at = findEntry(v, p, tail, STAMP)
        while at do
          -- another attempt of the same msg holds this entry too: it is handed to that one, not removed
          local heir = list and #list > 0 and findTail(list, digest)
          if heir then
            left[#left + 1] = string.sub(v, p, at + STAMP - 1) .. string.sub(list, heir, heir + TAIL - 1)
            list = string.sub(list, 1, heir - 1) .. string.sub(list, heir + TAIL)
            listChanged = true
            handed = handed + 1
          else
            left[#left + 1] = string.sub(v, p, at - 1)
            removed = removed + 1
          end
          p = at + ENTRY
          at = findEntry(v, p, tail, STAMP)
        end
        if p > 1 then
          left[#left + 1] = string.sub(v, p)
          local rest = table.concat(left)
          given = given + removed
          if #rest == 0 then redis.call('HDEL', key, fields[i]) else redis.call('HSET', key, fields[i], rest) end
        end
      end
      if listChanged then
        if #list == 0 then redis.call('HDEL', key, cos[i]) else redis.call('HSET', key, cos[i], list) end
      end
    end
  end
  out[#out + 1] = given
  out[#out + 1] = handed
end
return out
