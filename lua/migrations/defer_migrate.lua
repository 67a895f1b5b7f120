-- Moves held msgs from the queue layout before 0.2 (one queue per key prefix,
-- shared by every cap-config and gate) into one gate's queue, atomically per msg.
-- KEYS[1..7]  the old queue: due, lease, msg, merged, at, ck, collapse
-- KEYS[8..15] the gate's queue as in defer_put.lua: due, lease, msg, at, ck, collapse, exp, dropped
-- ARGV[1] the gate queue's key base (as in defer_put.lua)
-- ARGV[2..] ids whose stored msg names this gate (the caller read them)
-- Only a msg still due in the old queue moves: a leased one is being released
-- by an instance of the old version (its ack removes it, or its lease ends and
-- it moves then). Its stored JSON, release-at and merged msgs move as they are
-- (the old merged value, comma-joined JSON values, becomes one list element
-- holding a JSON array); its collapse key does not (later msgs start anew).
-- Returns how many moved.
local base = ARGV[1]
local moved = 0
for i = 2, #ARGV do
  local id = ARGV[i]
  local at = redis.call('ZSCORE', KEYS[1], id)
  local stored = redis.call('HGET', KEYS[3], id)
  if at and stored then
    local merged = redis.call('HGET', KEYS[4], id)
    local key = redis.call('HGET', KEYS[6], id)
    if key and redis.call('HGET', KEYS[7], key) == id then redis.call('HDEL', KEYS[7], key) end
    redis.call('ZREM', KEYS[1], id)
    redis.call('HDEL', KEYS[3], id)
    redis.call('HDEL', KEYS[4], id)
    redis.call('HDEL', KEYS[5], id)
    redis.call('HDEL', KEYS[6], id)
    -- never overwrite a msg the gate's queue already holds under this id
    if redis.call('HEXISTS', KEYS[10], id) == 0 then
      redis.call('HSET', KEYS[10], id, stored)
      redis.call('HSET', KEYS[11], id, at)
      redis.call('ZADD', KEYS[8], at, id)
      if merged then redis.call('RPUSH', base .. ':m:' .. id, '[' .. merged .. ']') end
      local ok, decoded = pcall(cjson.decode, stored)
      if ok and type(decoded) == 'table' and type(decoded.expiresAt) == 'number' then
        redis.call('ZADD', KEYS[14], decoded.expiresAt, id)
      end
      moved = moved + 1
    end
  end
end
return moved
