-- Atomic check-and-claim of many sends, one after another, in one call (SPEC §5, §9 batching).
-- Each send claims all of its caps or none; the sends of one recipient are judged in the
-- order given, each seeing what the ones before it claimed.
-- A recipient's counters live in one hash (lib/counter_entries.lua), one field per cap
-- (<cap>[:<per values>]), and field "!" holds the hash's expiry.
-- KEYS[k]   the counter hash of send k (the same key may appear for several sends)
-- ARGV      per send: its entry's tail (the argument's last 6 bytes: member digest, attempt token), n, then per cap:
--           field, window ms, max, period start ms, reset ms
--           (rolling caps: start 0, reset 0; calendar caps: entries since start count, all free at reset)
-- Returns { now_ms, then per send: allowed (1|0), then per cap: count, already held (1|0), retry ms }
-- retry ms: -1 not blocking, -2 blocking and never frees (max 0), else ms until a free slot.
-- @include counter_entries
local time = redis.call('TIME')
local now = tonumber(time[1]) * 1000 + math.floor(tonumber(time[2]) / 1000)
local stamp = struct.pack('>I6', now)

local out = { now }
local pos = 1
local fields, kept, counted, firsts, window, max, starts, reset, held = {}, {}, {}, {}, {}, {}, {}, {}, {}
for k = 1, #KEYS do
  local key = KEYS[k]
  local tail, n = string.sub(ARGV[pos], -6), tonumber(ARGV[pos + 1])
  local digest = string.sub(tail, 1, 4)
  pos = pos + 2
  for i = 1, n do
    fields[i] = ARGV[pos]
    window[i], max[i] = tonumber(ARGV[pos + 1]), tonumber(ARGV[pos + 2])
    starts[i], reset[i] = tonumber(ARGV[pos + 3]), tonumber(ARGV[pos + 4])
    pos = pos + 5
  end
  fields[n + 1] = EXPIRY
  local values = redis.call('HMGET', key, unpack(fields, 1, n + 1))

  local blocked = false
  for i = 1, n do
    local v = values[i] or ''
    local from, keepFrom = bounds(now, window[i], starts[i], reset[i])
    local keepAt = firstFrom(v, keepFrom)
    local countAt = from > keepFrom and firstFrom(v, from) or keepAt
    kept[i] = keepAt > 1 and string.sub(v, keepAt) or v
    counted[i] = (#v - countAt + 1) / ENTRY
    firsts[i] = countAt
    held[i] = findEntry(v, countAt, digest, 6) and 1 or 0
    values[i] = v
    if held[i] == 0 and counted[i] >= max[i] then blocked = true end
  end

  out[#out + 1] = blocked and 0 or 1
  if blocked then
    for i = 1, n do
      local retry = -1
      if held[i] == 0 and counted[i] >= max[i] then
        if max[i] <= 0 then
          retry = -2
        elseif reset[i] > 0 then
          retry = math.max(0, reset[i] - now)
        else
          -- enough entries must age out to leave max - 1: the (count - max + 1)-th oldest is the last of them
          local ts = unpackEntry('>I6', values[i], firsts[i] + (counted[i] - max[i]) * ENTRY)
          retry = math.max(0, ts + window[i] - now)
        end
      end
      out[#out + 1] = counted[i]
      out[#out + 1] = held[i]
      out[#out + 1] = retry
    end
  else
    local entry = stamp .. tail
    local writes = {}
    local needed = 0
    for i = 1, n do
      local count = counted[i]
      if held[i] == 0 then
        kept[i] = kept[i] .. entry
        count = count + 1
      end
      writes[#writes + 1] = fields[i]
      writes[#writes + 1] = kept[i]
      local _, _, until_ = bounds(now, window[i], starts[i], reset[i])
      if until_ > needed then needed = until_ end
      out[#out + 1] = count
      out[#out + 1] = held[i]
      out[#out + 1] = -1
    end
    writeCounters(key, writes, values[n + 1], needed)
  end
end
return out
