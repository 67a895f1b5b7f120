-- Holds msgs already leased to their caller, who releases each itself at its
-- instant and acks it (the throughput-gate's paced msgs, SPEC §6), and files
-- them under their tags, in one call. What defer_put.lua does for such a msg,
-- in a command or two per key for the whole batch rather than a dozen per msg: a
-- leased msg has no collapse key and is never a merge target, so none of the
-- per-msg merge bookkeeping applies; only what a former holding left is undone.
-- KEYS[1..8] as in defer_put.lua: due, lease, msg, at, ck, collapse, exp, dropped
-- KEYS[9..]  the tag indexes the items name (zset id -> release-at), in the queue's hash tag
-- ARGV[1] the queue's key base (as in defer_put.lua)
-- ARGV[2] number of items, then per item: id, release-at, stored msg, drop time
--         ("" none), lease until (epoch ms), tag (index into KEYS from 9 on; 0 none)
-- Ids in a tag whose release-at passed over 5 minutes ago were released (or
-- dropped) long since: they are trimmed here, as defer_tag.lua does.
-- Returns how many msgs were held.
local base = ARGV[1]
local n = tonumber(ARGV[2])
local ITEM = 6
-- most elements one command takes from unpack() (Lua's C stack holds ~8,000)
local SLICE = 1000

-- runs `command` [key] over `list`, `width` elements an item, SLICE items a call
local function each(list, width, command, key)
  for from = 1, #list, SLICE * width do
    local to = math.min(#list, from + SLICE * width - 1)
    if key then redis.call(command, key, unpack(list, from, to)) else redis.call(command, unpack(list, from, to)) end
  end
end

local ids, msgs, ats, leases, exps, noExp = {}, {}, {}, {}, {}, {}
local wasDue, fresh, freshKeys = {}, {}, {}
local tagged = {}
-- an id held twice in one call: its later item is a hold of a leased msg, and its drop time wins
local seen, expOf = {}, {}
for i = 0, n - 1 do
  local a = 3 + i * ITEM
  local id, at, stored, exp, leased, tag = ARGV[a], ARGV[a + 1], ARGV[a + 2], ARGV[a + 3], ARGV[a + 4], tonumber(ARGV[a + 5])
  local again = seen[id]
  if not again then
    seen[id] = true
    ids[#ids + 1] = id
  end
  expOf[id] = exp
  msgs[#msgs + 1] = id
  msgs[#msgs + 1] = stored
  ats[#ats + 1] = id
  ats[#ats + 1] = at
  leases[#leases + 1] = leased
  leases[#leases + 1] = id
  -- held and not taken: a retried hold keeps what was merged into it; else nothing is merged yet
  if not again and redis.call('ZSCORE', KEYS[1], id) then
    wasDue[#wasDue + 1] = id
  else
    fresh[#fresh + 1] = id
    freshKeys[#freshKeys + 1] = base .. ':m:' .. id
    freshKeys[#freshKeys + 1] = base .. ':u:' .. id
  end
  if tag > 0 then
    local list = tagged[tag]
    if not list then
      list = {}
      tagged[tag] = list
    end
    list[#list + 1] = at
    list[#list + 1] = id
  end
end

for _, id in ipairs(ids) do
  local exp = expOf[id]
  if exp ~= '' then
    exps[#exps + 1] = exp
    exps[#exps + 1] = id
  else
    noExp[#noExp + 1] = id
  end
end

each(freshKeys, 1, 'DEL')
each(fresh, 1, 'HDEL', KEYS[8])
-- a collapse key a former holding of the id left behind points at it no more
for from = 1, #ids, SLICE do
  local slice = { unpack(ids, from, math.min(#ids, from + SLICE - 1)) }
  local keys = redis.call('HMGET', KEYS[5], unpack(slice))
  for i, oldKey in ipairs(keys) do
    if oldKey and redis.call('HGET', KEYS[6], oldKey) == slice[i] then redis.call('HDEL', KEYS[6], oldKey) end
  end
  redis.call('HDEL', KEYS[5], unpack(slice))
end
each(msgs, 2, 'HSET', KEYS[3])
each(ats, 2, 'HSET', KEYS[4])
each(wasDue, 1, 'ZREM', KEYS[1])
each(leases, 2, 'ZADD', KEYS[2])
each(exps, 2, 'ZADD', KEYS[7])
each(noExp, 1, 'ZREM', KEYS[7])

if next(tagged) then
  local time = redis.call('TIME')
  local now = tonumber(time[1]) * 1000 + math.floor(tonumber(time[2]) / 1000)
  local stale = now - 300000
  for tag, list in pairs(tagged) do
    local key = KEYS[8 + tag]
    each(list, 2, 'ZADD', key)
    redis.call('ZREMRANGEBYSCORE', key, '-inf', '(' .. stale)
    local last = redis.call('ZRANGE', key, -1, -1, 'WITHSCORES')
    local keep = 300000
    if last[2] then keep = math.max(0, tonumber(last[2]) - now) + 300000 end
    redis.call('PEXPIRE', key, math.floor(keep))
  end
end
return n
