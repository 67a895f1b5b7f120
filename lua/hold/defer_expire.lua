-- Removes held msgs whose expiresAt passed (Redis TIME) from a gate's defer
-- queue: the msgs of a gate that runs on no instance, which nobody can release.
-- A msg taken (leased) is being released somewhere and stays.
-- KEYS as in defer_put.lua: due, lease, msg, at, ck, collapse, exp, dropped
-- ARGV[1] the queue's key base (as in defer_put.lua)   ARGV[2] most msgs to remove
-- Returns { { id... }, { msg... }, { { merged... }... }, { dropped or false... } }.
local time = redis.call('TIME')
local now = tonumber(time[1]) * 1000 + math.floor(tonumber(time[2]) / 1000)
local base, limit = ARGV[1], tonumber(ARGV[2])
local ids, msgs, merged, dropped = {}, {}, {}, {}
local kept = 0
while #ids < limit do
  local batch = redis.call('ZRANGEBYSCORE', KEYS[7], '-inf', now, 'LIMIT', kept, 200)
  if #batch == 0 then break end
  for _, id in ipairs(batch) do
    if #ids >= limit then break end
    if redis.call('ZSCORE', KEYS[1], id) then
      local n = #ids + 1
      ids[n] = id
      msgs[n] = redis.call('HGET', KEYS[3], id)
      merged[n] = redis.call('LRANGE', base .. ':m:' .. id, 0, -1)
      dropped[n] = redis.call('HGET', KEYS[8], id)
      local key = redis.call('HGET', KEYS[5], id)
      if key and redis.call('HGET', KEYS[6], key) == id then redis.call('HDEL', KEYS[6], key) end
      redis.call('ZREM', KEYS[1], id)
      redis.call('ZREM', KEYS[7], id)
      redis.call('HDEL', KEYS[3], id)
      redis.call('HDEL', KEYS[4], id)
      redis.call('HDEL', KEYS[5], id)
      redis.call('HDEL', KEYS[8], id)
      redis.call('DEL', base .. ':m:' .. id, base .. ':u:' .. id)
    elseif redis.call('ZSCORE', KEYS[2], id) then
      kept = kept + 1
    else
      -- neither held nor taken: a stale entry
      redis.call('ZREM', KEYS[7], id)
    end
  end
end
return { ids, msgs, merged, dropped }
