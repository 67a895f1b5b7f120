-- Which gates of one cap-config hold msgs, and until when an instance said it
-- runs each (SPEC §6: a msg of a gate that runs nowhere must not wait forever).
-- KEYS[1] registry zset gate -> until (epoch ms, Redis TIME)
-- ARGV[1] the job:
--   "beat"    ARGV[2] ttl ms, ARGV[3..] gates this instance runs: until = now + ttl
--             (never lowered by a slower clock: ZADD GT). Returns now.
--   "orphans" the gates no instance ran since their until passed.
--   "forget"  KEYS[2] due, KEYS[3] lease of the gate's queue, ARGV[2] the gate:
--             dropped from the registry when it still runs nowhere and its queue
--             is empty. Returns 1 when dropped.
local time = redis.call('TIME')
local now = tonumber(time[1]) * 1000 + math.floor(tonumber(time[2]) / 1000)
local job = ARGV[1]
if job == 'beat' then
  local seenUntil = now + tonumber(ARGV[2])
  for i = 3, #ARGV do redis.call('ZADD', KEYS[1], 'GT', seenUntil, ARGV[i]) end
  return now
elseif job == 'orphans' then
  return redis.call('ZRANGEBYSCORE', KEYS[1], '-inf', now)
elseif job == 'forget' then
  local score = redis.call('ZSCORE', KEYS[1], ARGV[2])
  if score and tonumber(score) <= now and redis.call('ZCARD', KEYS[2]) == 0 and redis.call('ZCARD', KEYS[3]) == 0 then
    redis.call('ZREM', KEYS[1], ARGV[2])
    return 1
  end
  return 0
end
return redis.error_reply('defer_gates: unknown job ' .. tostring(job))
