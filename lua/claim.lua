-- Atomic check-and-claim of every cap of one send (SPEC §5).
-- KEYS[i]        the counter (sorted set) of cap i; all share one hash tag
-- ARGV[1]        member: the send's messageId (idempotency key)
-- ARGV[3i-1]     window of cap i, ms
-- ARGV[3i]       effective max of cap i
-- ARGV[3i+1]     calendar caps: the instant (ms) the period resets, when every entry frees at once; 0 for rolling
-- Returns { allowed (1|0), now_ms, then per cap: count, already_held (1|0), retry_ms }
-- retry_ms: -1 not blocking, -2 blocking and never frees (max 0), else ms until a free slot.
local time = redis.call('TIME')
local now = tonumber(time[1]) * 1000 + tonumber(time[2]) / 1000
local member = ARGV[1]
local n = #KEYS
local counts, held = {}, {}
local blocked = false

local function cap(i)
  return KEYS[i], tonumber(ARGV[3 * i - 1]), tonumber(ARGV[3 * i]), tonumber(ARGV[3 * i + 1])
end

for i = 1, n do
  local key, window, max = cap(i)
  redis.call('ZREMRANGEBYSCORE', key, '-inf', now - window)
  counts[i] = redis.call('ZCARD', key)
  held[i] = redis.call('ZSCORE', key, member) and 1 or 0
  if held[i] == 0 and counts[i] >= max then blocked = true end
end

local out = { blocked and 0 or 1, math.floor(now) }
for i = 1, n do
  local key, window, max, resetAt = cap(i)
  local retry = -1
  if blocked then
    if held[i] == 0 and counts[i] >= max then
      if max <= 0 then
        retry = -2
      elseif resetAt > 0 then
        retry = math.max(0, math.ceil(resetAt - now))
      else
        -- enough entries must age out to leave max - 1: the (count - max)-th oldest is the last of them
        local entry = redis.call('ZRANGE', key, counts[i] - max, counts[i] - max, 'WITHSCORES')
        retry = math.max(0, math.ceil(tonumber(entry[2]) + window - now))
      end
    end
  else
    if held[i] == 0 then
      redis.call('ZADD', key, now, member)
      counts[i] = counts[i] + 1
    end
    if resetAt > 0 then
      redis.call('PEXPIRE', key, math.max(0, math.ceil(resetAt - now)) + 60000)
    else
      redis.call('PEXPIRE', key, window + 60000)
    end
  end
  out[#out + 1] = counts[i]
  out[#out + 1] = held[i]
  out[#out + 1] = retry
end
return out
