-- Read-only: how full each cap's counter is for one recipient (admin usage, SPEC §7).
-- KEYS[i]    counter of cap i
-- ARGV[3i-2] window of cap i, ms
-- ARGV[3i-1] effective max of cap i
-- ARGV[3i]   calendar caps: the instant (ms) the period resets; 0 for rolling
-- Returns { now_ms, then per cap: count in window, retry_ms (-1 a slot is free, -2 never frees) }
local time = redis.call('TIME')
local now = tonumber(time[1]) * 1000 + tonumber(time[2]) / 1000
local out = { math.floor(now) }
for i = 1, #KEYS do
  local window = tonumber(ARGV[3 * i - 2])
  local max = tonumber(ARGV[3 * i - 1])
  local resetAt = tonumber(ARGV[3 * i])
  local cutoff = '(' .. tostring(now - window)
  local count = redis.call('ZCOUNT', KEYS[i], cutoff, '+inf')
  local retry = -1
  if count >= max then
    if max <= 0 then
      retry = -2
    elseif resetAt > 0 then
      retry = math.max(0, math.ceil(resetAt - now))
    else
      local entry = redis.call('ZRANGEBYSCORE', KEYS[i], cutoff, '+inf', 'WITHSCORES', 'LIMIT', count - max, 1)
      retry = math.max(0, math.ceil(tonumber(entry[2]) + window - now))
    end
  end
  out[#out + 1] = count
  out[#out + 1] = retry
end
return out
