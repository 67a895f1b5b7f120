-- Read-only: how full counters are, for many recipients in one call (check mode, the bid-time
-- read of SPEC §5; admin usage, §7). Nothing is written, so nothing is claimed.
-- Counter hashes as in claim.lua.
-- KEYS[k]   a recipient's counter hash
-- ARGV      the limits the counters share (readLimits), then per key one string of its
--           counters, "field,limit index" each, comma-separated (a check reads 50 ads' counters:
--           one argument each instead of two per counter, which the client would encode apiece;
--           fields are key-encoded, so they never hold a comma)
-- Returns one text, the numbers joined by commas (numbersText): now_ms, then per key and counter:
-- count in window, retry ms (-1 a slot is free, -2 never frees)
-- @include counter_entries
local time = redis.call('TIME')
local now = tonumber(time[1]) * 1000 + math.floor(tonumber(time[2]) / 1000)
local limits, pos = readLimits(now)
local out = { now }
for k = 1, #KEYS do
  local fields, capsOf = {}, {}
  for field, index in string.gmatch(ARGV[pos], '([^,]+),(%d+)') do
    fields[#fields + 1] = field
    capsOf[#capsOf + 1] = limits[tonumber(index)]
  end
  pos = pos + 1
  local n = #fields
  if n > 0 then
    local values = redis.call('HMGET', KEYS[k], unpack(fields))
    for i = 1, n do
      local cap = capsOf[i]
      local v = values[i] or ''
      local countAt = firstFrom(v, cap.from, now)
      local count = (#v - countAt + 1) / ENTRY
      local retry = -1
      if count >= cap.max then
        if cap.max <= 0 then
          retry = -2
        elseif cap.reset > 0 then
          retry = math.max(0, cap.reset - now)
        else
          retry = math.max(0, entryTime(v, countAt + (count - cap.max) * ENTRY, now) + cap.window - now)
        end
      end
      out[#out + 1] = count
      out[#out + 1] = retry
    end
  end
end
return numbersText(out, #out)
