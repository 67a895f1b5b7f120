-- Hands out due msgs of a gate's defer queue, each to exactly one caller (SPEC §6).
-- KEYS as in defer_put.lua: due, lease, msg, at, ck, collapse, exp, dropped
-- ARGV[1] the queue's key base (as in defer_put.lua)
-- ARGV[2] most msgs to take   ARGV[3] lease, ms
-- 1. Leases that expired (an instance died holding them) go back to due, at
--    their old release-at, so this or another instance takes them.
-- 2. Up to ARGV[2] msgs with release-at <= now (Redis TIME), earliest first,
--    move to the lease set until now + lease; their collapse keys are dropped
--    (a later msg with that key starts a new held msg). What was merged into
--    them stays until the ack, so a lease that ends hands it out again.
-- Returns { now_ms, { id... }, { msg... }, { { merged... }... }, { dropped or false... } }.
local time = redis.call('TIME')
local now = tonumber(time[1]) * 1000 + math.floor(tonumber(time[2]) / 1000)
local base, limit = ARGV[1], tonumber(ARGV[2])
local leaseUntil = now + tonumber(ARGV[3])

while true do
  local expired = redis.call('ZRANGEBYSCORE', KEYS[2], '-inf', now, 'LIMIT', 0, 500)
  if #expired == 0 then break end
  local ats = redis.call('HMGET', KEYS[4], unpack(expired))
  for i = 1, #expired do
    if ats[i] then redis.call('ZADD', KEYS[1], ats[i], expired[i]) end
  end
  redis.call('ZREM', KEYS[2], unpack(expired))
end

local ids = redis.call('ZRANGEBYSCORE', KEYS[1], '-inf', now, 'LIMIT', 0, limit)
if #ids == 0 then return { now, {}, {}, {}, {} } end
redis.call('ZREM', KEYS[1], unpack(ids))
local scored = {}
for i = 1, #ids do
  scored[2 * i - 1] = leaseUntil
  scored[2 * i] = ids[i]
end
redis.call('ZADD', KEYS[2], unpack(scored))

local keys = redis.call('HMGET', KEYS[5], unpack(ids))
for i = 1, #ids do
  local key = keys[i]
  if key and redis.call('HGET', KEYS[6], key) == ids[i] then redis.call('HDEL', KEYS[6], key) end
end
redis.call('HDEL', KEYS[5], unpack(ids))

local msgs = redis.call('HMGET', KEYS[3], unpack(ids))
local dropped = redis.call('HMGET', KEYS[8], unpack(ids))
local merged = {}
for i = 1, #ids do
  merged[i] = redis.call('LRANGE', base .. ':m:' .. ids[i], 0, -1)
  -- an id without its msg can never be released: drop it rather than lease it forever
  if not msgs[i] then
    redis.call('ZREM', KEYS[2], ids[i])
    redis.call('ZREM', KEYS[7], ids[i])
    redis.call('HDEL', KEYS[4], ids[i])
    redis.call('HDEL', KEYS[8], ids[i])
    redis.call('DEL', base .. ':m:' .. ids[i], base .. ':u:' .. ids[i])
  end
end
return { now, ids, msgs, merged, dropped }
