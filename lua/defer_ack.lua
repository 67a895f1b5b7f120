-- Removes released msgs from a defer queue for good (SPEC §6).
-- KEYS as in defer_put.lua: due, lease, msg, merged, at, ck, collapse
-- ARGV    ids that were taken
-- Only a msg still leased is removed: an id deferred again since it was taken
-- (it came back through the chain) is a new deferral and stays.
-- Returns how many msgs were removed.
local removed = 0
for i = 1, #ARGV do
  local id = ARGV[i]
  if redis.call('ZREM', KEYS[2], id) == 1 then
    redis.call('HDEL', KEYS[3], id)
    redis.call('HDEL', KEYS[4], id)
    redis.call('HDEL', KEYS[5], id)
    removed = removed + 1
  end
end
return removed
