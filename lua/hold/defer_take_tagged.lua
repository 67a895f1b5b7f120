-- Hands out the held msgs of one tag at once, whatever their release-at: what a
-- gate's msg.flush releases now, or msg.reset drops (the throughput-gate's
-- ceiling). Each msg is handed out once, leased like defer_take.lua, then acked.
-- KEYS as in defer_put.lua: due, lease, msg, at, ck, collapse, exp, dropped;
-- KEYS[9] the tag's index (zset id -> release-at, written by defer_tag.lua)
-- ARGV[1] the queue's key base (as in defer_put.lua)
-- ARGV[2] most msgs to take   ARGV[3] lease, ms
-- Ids of the index no longer held (released, dropped) leave it as they are met;
-- a leased one (its holder paces it, or a take has it) stays, as in the memory
-- queue: should its lease end, a later take finds it again.
-- Returns { now_ms, { id... }, { msg... }, { { merged... }... }, { dropped or false... } }.
local time = redis.call('TIME')
local now = tonumber(time[1]) * 1000 + math.floor(tonumber(time[2]) / 1000)
local base, limit = ARGV[1], tonumber(ARGV[2])
local leaseUntil = now + tonumber(ARGV[3])
local ids, msgs, merged, dropped = {}, {}, {}, {}
-- the ids kept in the index so far (held): they sit, in order, before the ids not yet met
local kept = 0
while #ids < limit do
  local batch = redis.call('ZRANGE', KEYS[9], kept, kept + 199)
  if #batch == 0 then break end
  for _, id in ipairs(batch) do
    if #ids >= limit then break end
    local due = redis.call('ZSCORE', KEYS[1], id)
    if due or redis.call('ZSCORE', KEYS[2], id) then
      kept = kept + 1
    else
      redis.call('ZREM', KEYS[9], id)
    end
    -- held and not taken (a leased one is being released already)
    if due then
      local n = #ids + 1
      ids[n] = id
      redis.call('ZREM', KEYS[1], id)
      redis.call('ZADD', KEYS[2], leaseUntil, id)
      local key = redis.call('HGET', KEYS[5], id)
      if key and redis.call('HGET', KEYS[6], key) == id then redis.call('HDEL', KEYS[6], key) end
      redis.call('HDEL', KEYS[5], id)
      msgs[n] = redis.call('HGET', KEYS[3], id)
      merged[n] = redis.call('LRANGE', base .. ':m:' .. id, 0, -1)
      dropped[n] = redis.call('HGET', KEYS[8], id)
    end
  end
end
return { now, ids, msgs, merged, dropped }
