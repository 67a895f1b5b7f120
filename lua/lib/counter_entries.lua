-- Shared by the counter scripts (included where they say "-- @include counter_entries").
-- A counter is a field of the recipient's hash: packed entries, oldest first, 12 bytes each:
-- ts ms (6 bytes), member digest (4), attempt token (2).
local ENTRY, EXPIRY = 12, '!'
-- calendar entries are kept this much longer than their period: msgs in other zones may still count them
local ZONE_SPREAD = 27 * 3600000
local GRACE = 60000
local unpackEntry = struct.unpack

-- the offset (1-based) of the first entry at or after `at`, or #v + 1
local function firstFrom(v, at)
  local p = 1
  while p <= #v and unpackEntry('>I6', v, p) < at do p = p + ENTRY end
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

-- writes fields (field, value pairs) and extends the hash's life to cover `needed` (with slack,
-- so the next writes need not extend it again)
local function writeCounters(key, writes, expiryValue, needed)
  local expiry = tonumber(expiryValue) or 0
  if needed + GRACE > expiry then
    expiry = needed + 2 * GRACE
    writes[#writes + 1] = EXPIRY
    writes[#writes + 1] = expiry
    redis.call('HSET', key, unpack(writes))
    redis.call('PEXPIREAT', key, expiry)
  else
    redis.call('HSET', key, unpack(writes))
  end
end
