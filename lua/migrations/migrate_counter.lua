-- Moves one counter of version 0.1 (a sorted set per recipient and cap, member the messageId,
-- score the time) into the recipient's counter hash of 0.2 (claim.lua), in one step, then
-- deletes it. Run once per old key by the cap-config at start; running it twice changes nothing.
-- KEYS[1]   the old sorted set   KEYS[2]   the recipient's counter hash
-- ARGV[1]   the field it becomes   ARGV[2..] the entries' tails as numbers (digest × 65536), one
--           per member, in the order ZRANGE gave them to the caller
-- Returns how many entries moved (0 when the old key was gone).
-- @include counter_entries
local members = redis.call('ZRANGE', KEYS[1], 0, -1, 'WITHSCORES')
if #members == 0 then return 0 end
if #members / 2 ~= #ARGV - 1 then return redis.error_reply('migrate_counter: the sorted set changed since it was read') end
local entries = {}
for i = 1, #members, 2 do
  local t = math.floor(tonumber(members[i + 1]))
  entries[#entries + 1] = { t = t, bytes = struct.pack('>I5', t % WRAP) .. struct.pack('>I6', tonumber(ARGV[(i + 1) / 2 + 1])) }
end
-- a field may already hold entries (claimed since the upgrade, or another period's old key):
-- merge, so the field stays oldest first
local time = redis.call('TIME')
local now = tonumber(time[1]) * 1000 + math.floor(tonumber(time[2]) / 1000)
local existing = redis.call('HGET', KEYS[2], ARGV[1]) or ''
for p = 1, #existing, ENTRY do
  entries[#entries + 1] = { t = entryTime(existing, p, now), bytes = string.sub(existing, p, p + ENTRY - 1) }
end
table.sort(entries, function(a, b) return a.t < b.t end)
local packed = {}
for i = 1, #entries do packed[i] = entries[i].bytes end
redis.call('HSET', KEYS[2], ARGV[1], table.concat(packed))
local ttl = redis.call('PTTL', KEYS[1])
local left = redis.call('PTTL', KEYS[2])
if ttl > 0 and (left < 0 or left < ttl) then redis.call('PEXPIRE', KEYS[2], ttl) end
redis.call('DEL', KEYS[1])
return #members / 2
