-- Read-only: how full counters are, for many recipients in one call (check mode, the bid-time
-- read of SPEC §5; admin usage, §7). Nothing is written, so nothing is claimed.
-- Counter hashes as in claim.lua.
-- KEYS[k]   a recipient's counter hash
-- ARGV      the limits the counters share (readLimits), then per key: n, then per counter:
--           field, limit index
-- Returns { now_ms, then per key and counter: count in window, retry ms (-1 a slot is free,
-- -2 never frees) }
-- @include counter_entries
local time = redis.call('TIME')
local now = tonumber(time[1]) * 1000 + math.floor(tonumber(time[2]) / 1000)
local limits, pos = readLimits(now)
local out = { now }
for k = 1, #KEYS do
  local n = tonumber(ARGV[pos])
  pos = pos + 1
  if n > 0 then
    local fields = {}
    for i = 1, n do fields[i] = ARGV[pos + (i - 1) * 2] end
    local values = redis.call('HMGET', KEYS[k], unpack(fields))
    for i = 1, n do
      local cap = limits[tonumber(ARGV[pos + 1])]
      pos = pos + 2
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
return out
