-- Records sends in every cap's counter without checking (SPEC §5 record mode: after the
-- provider confirmed, or for an impression event), many in one call.
-- Counter hashes as in claim.lua. A member already counted in a cap's window is not added
-- again: an event delivered twice counts once.
-- KEYS[k]   the counter hash of record k
-- ARGV      the limits the records share (readLimits; max unused), then one per record:
--           "<tail>,<field>,<limit index>,..." (readItem), the tail being member digest × 65536
-- Returns one text, the numbers joined by commas (numbersText): now_ms, then per record and cap:
-- the count after recording
-- @include counter_entries
local time = redis.call('TIME')
local now = tonumber(time[1]) * 1000 + math.floor(tonumber(time[2]) / 1000)
local stamp = stampOf(now)
local limits, pos = readLimits(now)

local out = { now }
local fields, caps = {}, {}
for k = 1, #KEYS do
  local key = KEYS[k]
  local tail, digest, n
  tail, digest, n, pos = readItem(pos, limits, fields, caps)
  local values = redis.call('HMGET', key, unpack(fields, 1, n))
  local writes = {}
  local needed = 0
  for i = 1, n do
    local cap = caps[i]
    local v = values[i] or ''
    local keepAt = firstFrom(v, cap.keepFrom, now)
    local countAt = cap.from > cap.keepFrom and firstFrom(v, cap.from, now) or keepAt
    local kept = keepAt > 1 and string.sub(v, keepAt) or v
    local count = (#v - countAt + 1) / ENTRY
    if not findEntry(v, countAt, digest, STAMP) then
      kept = kept .. stamp .. tail
      count = count + 1
    end
    writes[2 * i - 1] = fields[i]
    writes[2 * i] = kept
    if cap.until_ > needed then needed = cap.until_ end
    out[#out + 1] = count
  end
  if n > 0 then writeCounters(key, writes, 2 * n, now, needed) end
end
return numbersText(out, #out)
