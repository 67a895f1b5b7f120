-- Read-only: how full counters are, for many recipients in one call (check mode, the bid-time
-- read of SPEC §5; admin usage, §7). Nothing is written, so nothing is claimed.
-- Counter hashes as in claim.lua. Many counters share a cap (one campaign cap, split per ad):
-- each cap's limits are sent once, and each counter names its cap.
-- KEYS[k]   a recipient's counter hash
-- ARGV      per key: c, then per cap: window ms, max, period start ms, reset ms;
--           then n, then per counter: field, the index (1-based) of its cap
-- Returns { now_ms, then per key and counter: count in window, retry ms (-1 a slot is free,
-- -2 never frees) }
-- @include counter_entries
local time = redis.call('TIME')
local now = tonumber(time[1]) * 1000 + math.floor(tonumber(time[2]) / 1000)
local out = { now }
local pos = 1
for k = 1, #KEYS do
  local c = tonumber(ARGV[pos])
  local caps = {}
  for j = 1, c do
    local at = pos + 1 + (j - 1) * 4
    local window, max, start, reset = tonumber(ARGV[at]), tonumber(ARGV[at + 1]), tonumber(ARGV[at + 2]), tonumber(ARGV[at + 3])
    caps[j] = { window = window, max = max, reset = reset, from = bounds(now, window, start, reset) }
  end
  pos = pos + 1 + 4 * c
  local n = tonumber(ARGV[pos])
  pos = pos + 1
  if n > 0 then
    local fields = {}
    for i = 1, n do fields[i] = ARGV[pos + (i - 1) * 2] end
    local values = redis.call('HMGET', KEYS[k], unpack(fields))
    for i = 1, n do
      local cap = caps[tonumber(ARGV[pos + 1])]
      pos = pos + 2
      local v = values[i] or ''
      local countAt = firstFrom(v, cap.from)
      local count = (#v - countAt + 1) / ENTRY
      local retry = -1
      if count >= cap.max then
        if cap.max <= 0 then
          retry = -2
        elseif cap.reset > 0 then
          retry = math.max(0, cap.reset - now)
        else
          retry = math.max(0, unpackEntry('>I6', v, countAt + (count - cap.max) * ENTRY) + cap.window - now)
        end
      end
      out[#out + 1] = count
      out[#out + 1] = retry
    end
  end
end
return out
