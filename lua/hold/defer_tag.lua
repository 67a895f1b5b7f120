-- Files held msgs under tags, so they can be taken together before they are due
-- (defer_take_tagged.lua): the throughput-gate tags each msg with its ceiling.
-- Called in the same MULTI as the defer_put.lua that held them.
-- KEYS[i]   the index of item i's tag (zset id -> release-at), in the queue's hash tag
-- ARGV      per item: id, release-at (epoch ms)
-- Ids whose release-at passed over 5 minutes ago were released (or dropped) long
-- since: they are trimmed here, so an index never outgrows what is held.
-- Returns how many ids were filed.
local time = redis.call('TIME')
local now = tonumber(time[1]) * 1000 + math.floor(tonumber(time[2]) / 1000)
local stale = now - 300000
for i = 1, #KEYS do
  local id, at = ARGV[2 * i - 1], tonumber(ARGV[2 * i])
  redis.call('ZADD', KEYS[i], at, id)
  redis.call('ZREMRANGEBYSCORE', KEYS[i], '-inf', '(' .. stale)
  local last = redis.call('ZRANGE', KEYS[i], -1, -1, 'WITHSCORES')
  local keep = 300000
  if last[2] then keep = math.max(0, tonumber(last[2]) - now) + 300000 end
  redis.call('PEXPIRE', KEYS[i], math.floor(keep))
end
return #KEYS
