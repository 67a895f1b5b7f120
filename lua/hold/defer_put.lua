-- Holds msgs in one gate's defer queue (SPEC §6), in order; each msg with a
-- collapse key merges into the msg still held under that key instead
-- (SPEC §4, disposition collapse). One call holds a whole batch.
-- KEYS[1] due      zset  id -> release-at (min(dueAt, expiresAt)), epoch ms
-- KEYS[2] lease    zset  id -> lease expiry, epoch ms (taken, not acked yet)
-- KEYS[3] msg      hash  id -> the DeferredMsg, encoded (opaque here)
-- KEYS[4] at       hash  id -> release-at, to put an expired lease back where it was
-- KEYS[5] ck       hash  id -> its collapse key, while it is held
-- KEYS[6] collapse hash  collapse key -> id of the held msg
-- KEYS[7] exp      zset  id -> drop time (min(expiresAt, deadline)), for the msgs that have one;
--                        a collapsed group's is the latest of its msgs' (none if one has none)
-- KEYS[8] dropped  hash  id -> merged msgs dropped past the bound
-- ARGV[1] the queue's key base: <base>:m:<id> (list: msgs merged into id, oldest
--         first) and <base>:u:<id> (set: ids of the entries merged into it).
--         They are named here from the held id, and carry the hash tag of KEYS,
--         so they are in the same Redis Cluster slot.
-- ARGV[2] most merged msgs kept per held msg (the newest)
-- ARGV[3] number of items, then per item: id, release-at, stored msg, collapse
--         key ("" none), drop time ("" none), lease until ("" none: due; epoch
--         ms: held by the caller, who releases it itself and acks it; no take
--         hands it out before then), merged msgs it already lost, n, then its
--         n msgs to merge (itself, then those collapsed into it)
-- Returns per item: the id held, 1 if the item was merged into it else 0.
local base, maxMerged = ARGV[1], tonumber(ARGV[2])
local out = {}
local a = 4
for _ = 1, tonumber(ARGV[3]) do
  local id, at, stored, key, exp, leased = ARGV[a], ARGV[a + 1], ARGV[a + 2], ARGV[a + 3], ARGV[a + 4], ARGV[a + 5]
  local lost, n = tonumber(ARGV[a + 6]), tonumber(ARGV[a + 7])
  local first = a + 8
  a = first + n
  local target = key ~= '' and redis.call('HGET', KEYS[6], key)
  -- merge only into a msg still held and not taken (a taken one dropped its key,
  -- but a stale pointer must never swallow a msg)
  if target and target ~= id and redis.call('ZSCORE', KEYS[1], target) then
    -- the same entry merged again (a retried hold) adds nothing
    if redis.call('SADD', base .. ':u:' .. target, id) == 1 then
      local list = base .. ':m:' .. target
      for i = first, a - 1 do redis.call('RPUSH', list, ARGV[i]) end
      local over = redis.call('LLEN', list) - maxMerged
      if over > 0 then redis.call('LTRIM', list, over, -1) else over = 0 end
      if over + lost > 0 then redis.call('HINCRBY', KEYS[8], target, over + lost) end
      -- the group is kept while any msg in it may still be released: its drop time is its latest
      if exp == '' then
        redis.call('ZREM', KEYS[7], target)
      else
        local current = redis.call('ZSCORE', KEYS[7], target)
        if current and tonumber(exp) > tonumber(current) then redis.call('ZADD', KEYS[7], exp, target) end
      end
    end
    out[#out + 1] = target
    out[#out + 1] = 1
  else
    -- held and not taken: a retried hold of the same msg keeps what was merged
    -- into it; taken (it came back round the chain) or new: nothing merged yet
    if not redis.call('ZSCORE', KEYS[1], id) then
      redis.call('DEL', base .. ':m:' .. id, base .. ':u:' .. id)
      redis.call('HDEL', KEYS[8], id)
    end
    local oldKey = redis.call('HGET', KEYS[5], id)
    if oldKey and oldKey ~= key and redis.call('HGET', KEYS[6], oldKey) == id then
      redis.call('HDEL', KEYS[6], oldKey)
    end
    redis.call('HSET', KEYS[3], id, stored)
    redis.call('HSET', KEYS[4], id, at)
    if leased ~= '' then
      redis.call('ZREM', KEYS[1], id)
      redis.call('ZADD', KEYS[2], leased, id)
    else
      redis.call('ZREM', KEYS[2], id)
      redis.call('ZADD', KEYS[1], at, id)
    end
    if exp ~= '' then redis.call('ZADD', KEYS[7], exp, id) else redis.call('ZREM', KEYS[7], id) end
    if key ~= '' then
      redis.call('HSET', KEYS[6], key, id)
      redis.call('HSET', KEYS[5], id, key)
    else
      redis.call('HDEL', KEYS[5], id)
    end
    out[#out + 1] = id
    out[#out + 1] = 0
  end
end
return out
