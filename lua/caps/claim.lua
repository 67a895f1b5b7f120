-- Atomic check-and-claim of many sends, one after another, in one call (SPEC §5, §9 batching).
-- Each send claims all of its caps or none; the sends of one recipient are judged in the
-- order given, each seeing what the ones before it claimed.
-- A recipient's counters live in one hash (lib/counter_entries.lua), one field per cap
-- (<cap>[:<per values>]); it lives as long as its longest-lived counter needs.
-- Shadow caps (SPEC §4 enforcement) are judged in the same step but never refuse: a send
-- only they would refuse is admitted without a slot in them (their count stays what it would
-- be if they were enforced); a send an enforced cap refuses claims nothing, shadow caps included.
-- KEYS[k]   the counter hash of send k (the same key may appear for several sends)
-- ARGV      the limits the sends share (lib/counter_entries.lua readLimits); the decision
--           histories they write (readHistories: their count, then "|<keep>|<lifetime ms>|<entry
--           after its time>" each); the sends' entry tails, 6 bytes each (member digest, attempt
--           token), in KEYS' order, the last 6 × #KEYS bytes of one argument; which shape each send
--           has, 2 bytes each (big-endian, 0-based), or empty when every send has the first; then
--           the shapes, what the sends ask of their counters, each distinct one once (readShapes:
--           per cap its field and limit index; from a gate that keeps a decision history,
--           "|<history index>": an allowed send adds "<now>|<entry after its time>" to the
--           hash's history). Bytes, not texts, so a send costs the script no parsing.
-- Returns one text, the numbers joined by commas (lib/counter_entries.lua numbersText): now_ms,
--           then per send: FRESH (2), allowed with a new slot in every cap, then per cap its count;
--           or allowed (1|0), then per cap: count, already held (0 no; 1 this attempt's entry, or a
--           record's; 2 another attempt's, which this admitted send now holds too:
--           lib/counter_entries.lua coHold), retry ms. Most sends are FRESH: for a send of several
--           caps, about a third of the numbers to encode and decode.
-- retry ms: -1 not full; else the cap is full for this send (an enforced cap blocks it, a
-- shadow cap would have): -2 never frees (max 0), else ms until a free slot.
-- @include counter_entries
local time = redis.call('TIME')
local now = tonumber(time[1]) * 1000 + math.floor(tonumber(time[2]) / 1000)
local stamp = stampOf(now)
local nowWrapped = now % WRAP
-- library functions as locals: a global's lookup costs a call of these as much again
local sub, find = string.sub, string.find
local limits, pos = readLimits(now)
local histories
histories, pos = readHistories(pos, now)
local tails, shapeOf = ARGV[pos], ARGV[pos + 1]
-- an argument may carry bytes before the tails (redis-benchmark's 12-digit random, as the bench sends it)
local tailsAt = #tails - TAIL * #KEYS
if tailsAt < 0 then return redis.error_reply('ERR claim.lua: ' .. #KEYS .. ' sends but ' .. #tails .. ' bytes of tails') end
local shapes = readShapes(pos + 2, limits, histories)
local oneShape = #shapeOf == 0 and shapes[1]

local FRESH = 2
local out = { now }
local o = 1
local fields, caps
local kept, counted, firsts, held, heldAt, full = {}, {}, {}, {}, {}, {}
-- an allowed send's field writes (field, value pairs), the first w of them its own: one table for all
local writes = {}

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
  local tail = sub(tails, tailsAt + TAIL * k - 5, tailsAt + TAIL * k)
  local digest = sub(tail, 1, 4)
  local read = oneShape
  if not read then
    local high, low = string.byte(shapeOf, 2 * k - 1, 2 * k)
    read = shapes[high * 256 + low + 1]
  end
  local n, history = read.n, read.history
  fields, caps = read.fields, read.caps
  -- the history's cursor read with the counters: one HMGET
  local values = redis.call('HMGET', key, unpack(fields, 1, history and n + 1 or n))

  local blocked, fresh = false, true
  for i = 1, n do
    local v = values[i] or ''
    local cap = caps[i]
    local countAt, heldFrom = 1, nil
    kept[i] = v
    if v ~= '' then
      -- a counter's oldest entry mostly still counts: one look at it
      if now - (nowWrapped - unpackEntry('>I5', v, 1)) % WRAP < cap.keepFrom then
        countAt = firstFrom(v, cap.keepFrom, now)
        kept[i] = sub(v, countAt)
      end
      if cap.split then countAt = firstFrom(v, cap.from, now) end
      heldFrom = find(v, digest, countAt + STAMP, true) and findEntry(v, countAt, digest, STAMP)
    end
    local count = (#v - countAt + 1) / ENTRY
    local isFull = not heldFrom and count >= cap.max
    counted[i], firsts[i], heldAt[i], held[i], full[i] = count, countAt, heldFrom, heldFrom and 1 or 0, isFull
    if isFull then
      fresh = false
      if not cap.shadow then blocked = true end
    elseif heldFrom then
      fresh = false
    end
  end

  o = o + 1
  out[o] = blocked and 0 or (fresh and FRESH or 1)
  if blocked then
    for i = 1, n do
      out[o + 1], out[o + 2], out[o + 3] = counted[i], held[i], full[i] and retryOf(i, values[i]) or -1
      o = o + 3
    end
  else
    local entry = stamp .. tail
    local w = 0
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
          if owner ~= sub(tail, 5, 6) and owner ~= RECORDED then
            held[i] = 2
            writes[w + 1] = fields[i] .. CO
            writes[w + 2] = coHold(redis.call('HGET', key, fields[i] .. CO), tail)
            w = w + 2
          end
        end
        writes[w + 1] = fields[i]
        writes[w + 2] = kept[i]
        w = w + 2
        if caps[i].until_ > needed then needed = caps[i].until_ end
      end
      if fresh then
        o = o + 1
        out[o] = count
      else
        out[o + 1], out[o + 2], out[o + 3] = count, held[i], retry
        o = o + 3
      end
    end
    if history then w = historyWrites(writes, w, values[n + 1], history.entry, history.keep) end
    if w > 0 then writeCounters(key, writes, w, now, needed, history and history.lifetime) end
  end
end
return numbersText(out, o)
