-- Read-only: how full each cap's counter of one recipient is (admin usage, SPEC §7).
-- Counter hash as in claim.lua.
-- KEYS[1]   the recipient's counter hash
-- ARGV      per cap: field, window ms, max, period start ms, reset ms
-- Returns { now_ms, then per cap: count in window, retry ms (-1 a slot is free, -2 never frees) }
-- @include counter_entries
local time = redis.call('TIME')
local now = tonumber(time[1]) * 1000 + math.floor(tonumber(time[2]) / 1000)
local n = #ARGV / 5
local fields = {}
for i = 1, n do fields[i] = ARGV[5 * i - 4] end
local values = n > 0 and redis.call('HMGET', KEYS[1], unpack(fields)) or {}
local out = { now }
for i = 1, n do
  local window, max = tonumber(ARGV[5 * i - 3]), tonumber(ARGV[5 * i - 2])
  local reset = tonumber(ARGV[5 * i])
  local v = values[i] or ''
  local from = bounds(now, window, tonumber(ARGV[5 * i - 1]), reset)
  local countAt = firstFrom(v, from)
  local count = (#v - countAt + 1) / ENTRY
  local retry = -1
  if count >= max then
    if max <= 0 then
      retry = -2
    elseif reset > 0 then
      retry = math.max(0, reset - now)
    else
      retry = math.max(0, unpackEntry('>I6', v, countAt + (count - max) * ENTRY) + window - now)
    end
  end
  out[#out + 1] = count
  out[#out + 1] = retry
end
return out
