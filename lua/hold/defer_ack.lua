-- Removes released msgs from a gate's defer queue for good (SPEC §6).
-- KEYS as in defer_put.lua: due, lease, msg, at, ck, collapse, exp, dropped
-- ARGV[1] the queue's key base (as in defer_put.lua)   ARGV[2..] ids that were taken
-- Only a msg still leased is removed: an id deferred again since it was taken
-- (it came back through the chain) is a new deferral and stays. Acking twice
-- (a retried ack) removes nothing more. One read per id, then one command per
-- key for the whole batch: a throughput-gate acks every msg it paces.
-- Returns how many msgs were removed.
local base = ARGV[1]
-- most elements one command takes from unpack() (Lua's C stack holds ~8,000)
local SLICE = 1000
local leased, keys = {}, {}
for i = 2, #ARGV do
  local id = ARGV[i]
  if redis.call('ZSCORE', KEYS[2], id) then
    leased[#leased + 1] = id
    keys[#keys + 1] = base .. ':m:' .. id
    keys[#keys + 1] = base .. ':u:' .. id
  end
end
local removed = 0
for from = 1, #leased, SLICE do
  local to = math.min(#leased, from + SLICE - 1)
  -- an id acked twice in one call is read leased twice, and removed (and counted) once
  removed = removed + redis.call('ZREM', KEYS[2], unpack(leased, from, to))
  redis.call('HDEL', KEYS[3], unpack(leased, from, to))
  redis.call('HDEL', KEYS[4], unpack(leased, from, to))
  redis.call('HDEL', KEYS[8], unpack(leased, from, to))
  redis.call('ZREM', KEYS[7], unpack(leased, from, to))
  redis.call('DEL', unpack(keys, 2 * from - 1, 2 * to))
end
return removed
