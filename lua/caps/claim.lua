-- Atomic check-and-claim of many sends, one after another, in one call (SPEC §5, §9 batching).
-- Each send claims all of its caps or none; the sends of one recipient are judged in the
-- order given, each seeing what the ones before it claimed.
-- A recipient's counters live in one hash (lib/counter_entries.lua), one field per cap
-- (<cap>[:<per values>]); it lives as long as its longest-lived counter needs.
-- Shadow caps (SPEC §4 enforcement) are judged in the same step but never refuse: a send
-- only they would refuse is admitted without a slot in them (their count stays what it would
-- be if they were enforced); a send an enforced cap refuses claims nothing, shadow caps included.
-- KEYS[k]   the counter hash of send k (the same key may appear for several sends)
-- ARGV      the limits the sends share (lib/counter_entries.lua readLimits), then the decision
--           histories they write, if any (readHistories: "|<keep>|<lifetime ms>|<entry after its
--           time>" each), then the sends' texts, one per argument or many in one joined by ';'
--           (readItemTexts), in KEYS' order: "<tail>,<field>,<limit index>,...": its entry's tail as
--           a number (member digest × 65536 + attempt token), then per cap its field and limit
--           index (readItemText); then, from a gate that keeps a decision history, "|<history
--           index>": an allowed send adds "<now>|<entry after its time>" to the hash's history
--           (historyOf)
-- Returns { now_ms, then per send: allowed (1|0), then per cap: count, already held (0 no; 1 this
--           attempt's entry, or a record's; 2 another attempt's, which this admitted send now holds
--           too: lib/counter_entries.lua coHold), retry ms }
-- retry ms: -1 not full; else the cap is full for this send (an enforced cap blocks it, a
-- shadow cap would have): -2 never frees (max 0), else ms until a free slot.
-- @include counter_entries
local time = redis.call('TIME')
local now = tonumber(time[1]) * 1000 + math.floor(tonumber(time[2]) / 1000)
local stamp = stampOf(now)
local limits, pos = readLimits(now)
local histories
histories, pos = readHistories(pos, now)
local items = readItemTexts(pos)

local out = { now }
local fields, caps, kept, counted, firsts, held, heldAt, full = {}, {}, {}, {}, {}, {}, {}, {}

-- the wait until cap i of the send being judged has a free slot
local function retryOf(i, value)
  local cap = caps[i]
  if cap.max <= 0 then return -2 end
  if cap.reset > 0 then return math.max(0, cap.reset - now) end
  -- enough entries must age out to leave max - 1: the (count - max + 1)-th oldest is the last of them
  local ts = entryTime(value, firsts[i] + (counted[i] - cap.max) * ENTRY, now)
  return math.max(0, ts + cap.window - now)
end

for k = 1, #KEYS do
  local key = KEYS[k]
  local text = items[k]
  local history = historyOf(text, histories)
  local tail, digest, n = readItemText(text, limits, fields, caps)
  -- the history's cursor read with the counters: one HMGET
  if history then fields[n + 1] = HISTORY end
  local values = redis.call('HMGET', key, unpack(fields, 1, history and n + 1 or n))

  local blocked = false
  for i = 1, n do
    local v = values[i] or ''
    local cap = caps[i]
    local keepAt = firstFrom(v, cap.keepFrom, now)
    local countAt = cap.from > cap.keepFrom and firstFrom(v, cap.from, now) or keepAt
    kept[i] = keepAt > 1 and string.sub(v, keepAt) or v
    counted[i] = (#v - countAt + 1) / ENTRY
    firsts[i] = countAt
    heldAt[i] = findEntry(v, countAt, digest, STAMP)
    held[i] = heldAt[i] and 1 or 0
    values[i] = v
    full[i] = held[i] == 0 and counted[i] >= cap.max
    if full[i] and not cap.shadow then blocked = true end
  end

  out[#out + 1] = blocked and 0 or 1
  if blocked then
    for i = 1, n do
      out[#out + 1] = counted[i]
      out[#out + 1] = held[i]
      out[#out + 1] = full[i] and retryOf(i, values[i]) or -1
    end
  else
    local entry = stamp .. tail
    local token = string.sub(tail, 5, 6)
    local writes = {}
    local needed = 0
    for i = 1, n do
      local count = counted[i]
      local retry = -1
      if full[i] then
        -- a shadow cap that would refuse: reported, not claimed
        retry = retryOf(i, values[i])
      else
        if held[i] == 0 then
          kept[i] = kept[i] .. entry
          count = count + 1
        else
          local owner = string.sub(values[i], heldAt[i] + STAMP + 4, heldAt[i] + ENTRY - 1)
          if owner ~= token and owner ~= RECORDED then
            held[i] = 2
            writes[#writes + 1] = fields[i] .. CO
            writes[#writes + 1] = coHold(redis.call('HGET', key, fields[i] .. CO), tail)
          end
        end
        writes[#writes + 1] = fields[i]
        writes[#writes + 1] = kept[i]
        if caps[i].until_ > needed then needed = caps[i].until_ end
      end
      out[#out + 1] = count
      out[#out + 1] = held[i]
      out[#out + 1] = retry
    end
    if history then historyWrites(writes, values[n + 1], history.entry, history.keep) end
    if #writes > 0 then writeCounters(key, writes, now, needed, history and history.lifetime) end
  end
end
return out
