-- Holds one msg in a cap-config's defer queue (SPEC §6), or merges it into the
-- msg already held under the same collapse key (SPEC §4, disposition collapse).
-- KEYS[1] due      zset  id -> release-at (min(dueAt, expiresAt)), epoch ms
-- KEYS[2] lease    zset  id -> lease expiry, epoch ms (taken, not acked yet)
-- KEYS[3] msg      hash  id -> JSON of the DeferredMsg (opaque here)
-- KEYS[4] merged   hash  id -> JSON values of msgs collapsed into it, comma-joined
-- KEYS[5] at       hash  id -> release-at, to put an expired lease back where it was
-- KEYS[6] ck       hash  id -> its collapse key, while it is held
-- KEYS[7] collapse hash  collapse key -> id of the held msg
-- ARGV[1] id   ARGV[2] release-at   ARGV[3] the DeferredMsg JSON
-- ARGV[4] collapse key ("" for none)
-- ARGV[5] what a merge appends: the msg's JSON (and those already collapsed into it), comma-joined
-- Returns { id held, 1 if it was merged into that held msg else 0 }.
local id, at, key = ARGV[1], ARGV[2], ARGV[4]

if key ~= '' then
  local target = redis.call('HGET', KEYS[7], key)
  -- merge only into a msg still held and not taken (a taken one dropped its key,
  -- but a stale pointer must never swallow a msg)
  if target and target ~= id and redis.call('ZSCORE', KEYS[1], target) then
    local held = redis.call('HGET', KEYS[4], target)
    redis.call('HSET', KEYS[4], target, held and (held .. ',' .. ARGV[5]) or ARGV[5])
    return { target, 1 }
  end
end

-- a new msg, or the same id deferred again (a released msg that came back):
-- the new copy replaces the old one, leased or not, with nothing merged into it yet
local oldKey = redis.call('HGET', KEYS[6], id)
if oldKey and oldKey ~= key and redis.call('HGET', KEYS[7], oldKey) == id then
  redis.call('HDEL', KEYS[7], oldKey)
end
redis.call('ZREM', KEYS[2], id)
redis.call('HDEL', KEYS[4], id)
redis.call('HSET', KEYS[3], id, ARGV[3])
redis.call('HSET', KEYS[5], id, at)
redis.call('ZADD', KEYS[1], at, id)
if key ~= '' then
  redis.call('HSET', KEYS[7], key, id)
  redis.call('HSET', KEYS[6], id, key)
else
  redis.call('HDEL', KEYS[6], id)
end
return { id, 0 }
