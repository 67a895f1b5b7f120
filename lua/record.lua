-- Records a send in every cap's counter without checking (SPEC §5 record mode:
-- after the provider confirmed, or for an impression event).
-- KEYS[i]     counter of cap i
-- ARGV[1]     member: messageId / event id (recording it again changes nothing)
-- ARGV[2i]    window of cap i, ms
-- ARGV[2i+1]  calendar caps: the instant (ms) the period resets; 0 for rolling
-- Returns { now_ms, count of cap 1, count of cap 2, ... }
local time = redis.call('TIME')
local now = tonumber(time[1]) * 1000 + tonumber(time[2]) / 1000
local out = { math.floor(now) }
for i = 1, #KEYS do
  local window = tonumber(ARGV[2 * i])
  local resetAt = tonumber(ARGV[2 * i + 1])
  redis.call('ZREMRANGEBYSCORE', KEYS[i], '-inf', now - window)
  redis.call('ZADD', KEYS[i], 'NX', now, ARGV[1])
  if resetAt > 0 then
    redis.call('PEXPIRE', KEYS[i], math.max(0, math.ceil(resetAt - now)) + 60000)
  else
    redis.call('PEXPIRE', KEYS[i], window + 60000)
  end
  out[#out + 1] = redis.call('ZCARD', KEYS[i])
end
return out
