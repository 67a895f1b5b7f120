-- Removes released msgs from a gate's defer queue for good (SPEC §6).
-- KEYS as in defer_put.lua: due, lease, msg, at, ck, collapse, exp, dropped
-- ARGV[1] the queue's key base (as in defer_put.lua)   ARGV[2..] ids that were taken
-- Only a msg still leased is removed: an id deferred again since it was taken
-- (it came back through the chain) is a new deferral and stays. Acking twice
-- (a retried ack) removes nothing more.
-- Returns how many msgs were removed.
local base = ARGV[1]
local removed = 0
for i = 2, #ARGV do
  local id = ARGV[i]
  if redis.call('ZREM', KEYS[2], id) == 1 then
    redis.call('HDEL', KEYS[3], id)
    redis.call('HDEL', KEYS[4], id)
    redis.call('HDEL', KEYS[8], id)
    redis.call('ZREM', KEYS[7], id)
    redis.call('DEL', base .. ':m:' .. id, base .. ':u:' .. id)
    removed = removed + 1
  end
end
return removed
