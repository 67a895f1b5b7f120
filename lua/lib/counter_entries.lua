-- Shared by the counter scripts (included where they say "-- @include counter_entries").
-- A counter is a field of the recipient's hash: packed entries, oldest first, 11 bytes each:
-- ts (5 bytes: ms modulo 2^40, about 34.8 years), member digest (4), attempt token (2).
local ENTRY, STAMP = 11, 5
local WRAP = 1099511627776
-- calendar entries are kept this much longer than their period: msgs in other zones may still count them
local ZONE_SPREAD = 27 * 3600000
local GRACE = 60000
local unpackEntry = struct.unpack

-- the ts of an entry written at `now`
local function stampOf(now)
  return struct.pack('>I5', now % WRAP)
end

-- the time of the entry at offset p: the instant at or before `now` its ts names (no entry
-- is kept anywhere near 34.8 years, so the wrap is never ambiguous)
local function entryTime(v, p, now)
  return now - (now % WRAP - unpackEntry('>I5', v, p)) % WRAP
end

-- the offset (1-based) of the first entry at or after `at`, or #v + 1
local function firstFrom(v, at, now)
  local p = 1
  while p <= #v and entryTime(v, p, now) < at do p = p + ENTRY end
  return p
end

-- the offset of an entry at or after offset p whose bytes from `skip` + 1 on start with `bytes`, or nil
local function findEntry(v, p, bytes, skip)
  local at = string.find(v, bytes, p + skip, true)
  while at do
    if (at - p - skip) % ENTRY == 0 then return at - skip end
    at = string.find(v, bytes, at + 1, true)
  end
  return nil
end

-- a counter's bounds at `now`: entries from `from` on count; from `keepFrom` on they are kept;
-- the counter must live until `until_`
local function bounds(now, window, start, reset)
  if reset > 0 then return start, now - window - ZONE_SPREAD, now + window + ZONE_SPREAD end
  return now - window + 1, now - window + 1, now + window
end

-- the limits a call's counters share, from ARGV[1] on: c, then per limit: window ms, max,
-- period start ms (calendar caps), reset ms (calendar caps; 0 for rolling), shadow (1: the
-- cap is only watched, never refuses; 0: enforced). Returns them (1-based, with their bounds
-- at `now`, and `split` when fewer entries count than are kept) and the ARGV position after them.
local LIMIT_ARGS = 5
local function readLimits(now)
  local c = tonumber(ARGV[1])
  local limits = {}
  for j = 1, c do
    local at = 2 + (j - 1) * LIMIT_ARGS
    local window, max, start, reset = tonumber(ARGV[at]), tonumber(ARGV[at + 1]), tonumber(ARGV[at + 2]), tonumber(ARGV[at + 3])
    local from, keepFrom, until_ = bounds(now, window, start, reset)
    limits[j] = { window = window, max = max, reset = reset, from = from, keepFrom = keepFrom, until_ = until_, split = from > keepFrom,
      shadow = ARGV[at + 4] == '1' }
  end
  return limits, 2 + LIMIT_ARGS * c
end

-- a send's entry tail (6 bytes) from its text, whose first comma is at `at` (nil: none)
local function tailOf(item, at)
  return struct.pack('>I6', tonumber(at and string.sub(item, 1, at - 1) or item))
end

-- reads ",<field>,<limit index>,..." (fields are encoded key parts: never a comma) into
-- fields[1..n] and caps[1..n]; returns n
local function readCounters(text, limits, fields, caps)
  local n = 0
  for field, index in string.gmatch(text, ',([^,]+),(%d+)') do
    n = n + 1
    fields[n], caps[n] = field, limits[tonumber(index)]
  end
  return n
end

-- reads one send's text: "<tail>,<field>,<limit index>,<field>,<limit index>...", its entry's
-- tail as a number (member digest × 65536 + token), then its counters (readCounters). Returns
-- the tail (6 bytes), the digest (its first 4) and n.
local function readItemText(item, limits, fields, caps)
  local at = string.find(item, ',', 1, true)
  local tail = tailOf(item, at)
  local n = at and readCounters(string.sub(item, at), limits, fields, caps) or 0
  return tail, string.sub(tail, 1, 4), n
end

-- reads one send's argument, ARGV[pos] (readItemText), one argument per send, not 2 + 2n: the
-- client encodes each argument on its own, and a batch of 256 sends had 2,000 of them. Returns
-- the tail, the digest, n and the position after it.
local function readItem(pos, limits, fields, caps)
  local tail, digest, n = readItemText(ARGV[pos], limits, fields, caps)
  return tail, digest, n, pos + 1
end

-- An entry's token when a record made it (no attempt gives it back)
local RECORDED = '\0\0'

-- Attempts that hold another attempt's entry (two copies of one send in flight, the second
-- admitted as a retry of the first) are listed in the field <counter>!co: their tails (digest,
-- token; 6 bytes each). A give-back of the entry's own attempt then hands the entry to one of
-- them instead of removing it, so the slot stays while any attempt that relies on it may still
-- go out, and goes with the last give-back. ('!' never appears in an encoded counter field.)
local CO, TAIL = '!co', 6

-- the offset of the first tail in a co-holder list that starts with `bytes` (a whole tail, or a
-- digest), or nil
local function findTail(list, bytes)
  local at = string.find(list, bytes, 1, true)
  while at do
    if (at - 1) % TAIL == 0 then return at end
    at = string.find(list, bytes, at + 1, true)
  end
  return nil
end

-- the co-holder list with `tail` in it (once)
local function coHold(list, tail)
  list = list or ''
  if findTail(list, tail) then return list end
  return list .. tail
end

-- writes the first `w` of `writes` (field, value pairs) and extends the hash's life to cover
-- `needed` (with a minute of slack, so the next writes need not extend it again); `lifetime` (ms,
-- optional): the hash holds a decision history (lua/history/append.lua), which lives at least that
-- long after this write: with less left, it is renewed to one and a half of it
local function writeCounters(key, writes, w, now, needed, lifetime)
  redis.call('HSET', key, unpack(writes, 1, w))
  local ttl = redis.call('PTTL', key)
  if lifetime and ttl < lifetime then
    local ms = math.max(lifetime + lifetime / 2, needed + 2 * GRACE - now)
    redis.call('PEXPIRE', key, ms)
  elseif ttl < 0 or now + ttl < needed + GRACE then
    redis.call('PEXPIRE', key, needed + 2 * GRACE - now)
  end
end

-- A recipient's decision history lives in its counter hash, beside the counters, as a ring of
-- `keep` fields '|h0' .. '|h<keep - 1>' (no counter field holds a '|'), an entry each, and the
-- field '|h', the slot the next entry goes in. An entry fits a small hash's 64-byte values
-- (src/core/history/historyEntry.ts), so the hash stays compact however many are kept.
local HISTORY = '|h'

-- adds to `writes` after its first `w` (field, value pairs) the fields that write `entry` after the
-- entries in the slots before `cursor` (the '|h' field read, or false); returns the count after them
local function historyWrites(writes, w, cursor, entry, keep)
  local slot = (tonumber(cursor) or 0) % keep
  writes[w + 1] = HISTORY .. slot
  writes[w + 2] = entry
  writes[w + 3] = HISTORY
  writes[w + 4] = (slot + 1) % keep
  return w + 4
end

-- The histories a claim call's allowed sends write (src/core/history/claimHistory.ts), from
-- ARGV[pos] on: their count, then one argument each, "|<keep>|<lifetime ms>|<entry after its
-- time>". A gate's sends share one, so it is read once a call, and its entry made once with the
-- call's `now`. Returns them (1-based: { keep, lifetime, entry }) and the position after them.
local function readHistories(pos, now)
  local histories = {}
  local hexNow
  for h = 1, tonumber(ARGV[pos]) do
    local keep, lifetime, rest = string.match(ARGV[pos + h], '^|(%d+)|(%d+)(|.*)$')
    hexNow = hexNow or string.format('%x', now)
    histories[h] = { keep = tonumber(keep), lifetime = tonumber(lifetime), entry = hexNow .. rest }
  end
  return histories, pos + 1 + #histories
end

-- What a claim call's sends ask of their counters, from ARGV[pos] on, each distinct one once (a
-- batch's sends mostly claim the same caps): their counters (readCounters), then "|<history
-- index>" when the send writes a decision history. Returns them (1-based: { n, fields (with the
-- history's cursor field after them when it names a history), caps, history }).
local function readShapes(pos, limits, histories)
  local shapes = {}
  for a = pos, #ARGV do
    local text = ARGV[a]
    local fields, caps = {}, {}
    local n = readCounters(text, limits, fields, caps)
    local bar = string.find(text, '|', 1, true)
    local history = bar and histories[tonumber(string.sub(text, bar + 1))]
    if history then fields[n + 1] = HISTORY end
    shapes[#shapes + 1] = { n = n, fields = fields, caps = caps, history = history }
  end
  return shapes
end

-- A script's answer as one text, its first `n` numbers joined by commas (src/redis/integerText.ts
-- reads it): the client decodes an array of integers with objects of its own for each one. Most
-- numbers recur (statuses, counts, -1), so each distinct one is made a string once a call: a
-- number concatenated as it is is formatted anew every time. '%d', as Redis turns a number into an
-- integer reply: whole digits, never an exponent, a fraction cut off.
local function numbersText(out, n)
  local texts = {}
  for i = 1, n do
    local v = out[i]
    local t = texts[v]
    if not t then
      t = string.format('%d', v)
      texts[v] = t
    end
    out[i] = t
  end
  return table.concat(out, ',', 1, n)
end
