-- Records sends in every cap's counter without checking (SPEC §5 record mode: after the
-- provider confirmed, or for an impression event), many in one call.
-- Counter hashes as in claim.lua. A member already counted in a cap's window is not added
-- again: an event delivered twice counts once.
-- KEYS[k]   the counter hash of record k
-- ARGV      per record: its entry's tail (the argument's last 6 bytes: member digest, token 0), n, then per cap:
--           field, window ms, period start ms, reset ms
-- Returns { now_ms, then per record and cap: the count after recording }
-- @include counter_entries
local time = redis.call('TIME')
local now = tonumber(time[1]) * 1000 + math.floor(tonumber(time[2]) / 1000)
local stamp = struct.pack('>I6', now)

local out = { now }
local pos = 1
local fields = {}
for k = 1, #KEYS do
  local key = KEYS[k]
  local tail, n = string.sub(ARGV[pos], -6), tonumber(ARGV[pos + 1])
  local digest = string.sub(tail, 1, 4)
  local at = pos + 2
  for i = 1, n do fields[i] = ARGV[at + (i - 1) * 4] end
  fields[n + 1] = EXPIRY
  local values = redis.call('HMGET', key, unpack(fields, 1, n + 1))
  local writes = {}
  local needed = 0
  for i = 1, n do
    local window, start, reset = tonumber(ARGV[at + 1]), tonumber(ARGV[at + 2]), tonumber(ARGV[at + 3])
    at = at + 4
    local v = values[i] or ''
    local from, keepFrom, until_ = bounds(now, window, start, reset)
    local keepAt = firstFrom(v, keepFrom)
    local countAt = from > keepFrom and firstFrom(v, from) or keepAt
    local kept = keepAt > 1 and string.sub(v, keepAt) or v
    local count = (#v - countAt + 1) / ENTRY
    if not findEntry(v, countAt, digest, 6) then
      kept = kept .. stamp .. tail
      count = count + 1
    end
    writes[#writes + 1] = fields[i]
    writes[#writes + 1] = kept
    if until_ > needed then needed = until_ end
    out[#out + 1] = count
  end
  pos = at
  if n > 0 then writeCounters(key, writes, values[n + 1], needed) end
end
return out
