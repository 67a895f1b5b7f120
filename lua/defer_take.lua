-- Hands out due msgs of a defer queue, each to exactly one caller (SPEC §6).
-- KEYS as in defer_put.lua: due, lease, msg, merged, at, ck, collapse
-- ARGV[1] most msgs to take   ARGV[2] lease, ms
-- 1. Leases that expired (an instance died holding them) go back to due, at
--    their old release-at, so this or another instance takes them.
-- 2. Up to ARGV[1] msgs with release-at <= now (Redis TIME), earliest first,
--    move to the lease set until now + lease; their collapse keys are dropped
--    (a later msg with that key starts a new held msg).
-- Returns { now_ms, { id... }, { msg JSON... }, { merged JSON or false... } }.
local time = redis.call('TIME')
local now = tonumber(time[1]) * 1000 + math.floor(tonumber(time[2]) / 1000)
local limit = tonumber(ARGV[1])
local leaseUntil = now + tonumber(ARGV[2])

while true do
  local expired = redis.call('ZRANGEBYSCORE', KEYS[2], '-inf', now, 'LIMIT', 0, 500)
  if #expired == 0 then break end
  local ats = redis.call('HMGET', KEYS[5], unpack(expired))
  for i = 1, #expired do
    if ats[i] then redis.call('ZADD', KEYS[1], ats[i], expired[i]) end
  end
  redis.call('ZREM', KEYS[2], unpack(expired))
end

local ids = redis.call('ZRANGEBYSCORE', KEYS[1], '-inf', now, 'LIMIT', 0, limit)
if #ids == 0 then return { now, {}, {}, {} } end
redis.call('ZREM', KEYS[1], unpack(ids))
local scored = {}
for i = 1, #ids do
  scored[2 * i - 1] = leaseUntil
  scored[2 * i] = ids[i]
end
redis.call('ZADD', KEYS[2], unpack(scored))

local keys = redis.call('HMGET', KEYS[6], unpack(ids))
for i = 1, #ids do
  local key = keys[i]
  if key and redis.call('HGET', KEYS[7], key) == ids[i] then redis.call('HDEL', KEYS[7], key) end
end
redis.call('HDEL', KEYS[6], unpack(ids))

local msgs = redis.call('HMGET', KEYS[3], unpack(ids))
local merged = redis.call('HMGET', KEYS[4], unpack(ids))
for i = 1, #ids do
  -- an id without its msg can never be released: drop it rather than lease it forever
  if not msgs[i] then
    redis.call('ZREM', KEYS[2], ids[i])
    redis.call('HDEL', KEYS[4], ids[i])
    redis.call('HDEL', KEYS[5], ids[i])
  end
end
return { now, ids, msgs, merged }
