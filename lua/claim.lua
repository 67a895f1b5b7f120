-- Atomic check-and-claim of every cap of one send (SPEC §5).
-- KEYS[i]        the counter (sorted set) of cap i; all share one hash tag
-- ARGV[1]        member: the send's messageId (idempotency key)
-- ARGV[2i]       window of cap i, ms
-- ARGV[2i+1]     effective max of cap i
-- Returns { allowed (1|0), now_ms, then per cap: count, already_held (1|0), retry_ms }
-- retry_ms: -1 not blocking, -2 blocking and never frees (max 0), else ms until a free slot.
local time = redis.call('TIME')
local now = tonumber(time[1]) * 1000 + tonumber(time[2]) / 1000
local member = ARGV[1]
local n = #KEYS
local counts, held = {}, {}
local blocked = false

for i = 1, n do
  local key = KEYS[i]
  local window = tonumber(ARGV[2 * i])
  local max = tonumber(ARGV[2 * i + 1])
  redis.call('ZREMRANGEBYSCORE', key, '-inf', now - window)
  counts[i] = redis.call('ZCARD', key)
  held[i] = redis.call('ZSCORE', key, member) and 1 or 0
  if held[i] == 0 and counts[i] >= max then blocked = true end
end

local out = { blocked and 0 or 1, math.floor(now) }
for i = 1, n do
  local key = KEYS[i]
  local window = tonumber(ARGV[2 * i])
  local max = tonumber(ARGV[2 * i + 1])
  local retry = -1
  if blocked then
    if held[i] == 0 and counts[i] >= max then
      if max <= 0 then
        retry = -2
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
    redis.call('PEXPIRE', key, window + 60000)
  end
  out[#out + 1] = counts[i]
  out[#out + 1] = held[i]
  out[#out + 1] = retry
end
return out
