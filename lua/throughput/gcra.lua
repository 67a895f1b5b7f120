-- GCRA reservations of many msgs, each against one throughput ceiling (SPEC §8),
-- in order: a key named twice in one call sees its earlier items' reservations.
-- KEYS[i]   the ceiling of item i: a string holding its TAT, whole µs of Redis TIME
-- ARGV      per item: emission interval T (µs), tolerance (burst - 1) * T (µs),
--           most wait (µs; 0 = skip mode: only a msg that conforms now passes)
-- A msg conforms at max(now, max(TAT, now) - tolerance). When that is at most the
-- most wait away it is reserved: TAT = max(TAT, now) + T, kept until it passes
-- (plus a grace second). Otherwise nothing changes.
-- Returns { now µs, per item: 1 reserved | 0 refused, wait µs (until its reserved
-- instant, or until it would conform) }. src/core/throughput/gcra.ts is the same.
local time = redis.call('TIME')
local now = tonumber(time[1]) * 1000000 + tonumber(time[2])
local out = { now }
for i = 1, #KEYS do
  local a = 3 * (i - 1)
  local t, tolerance, maxWait = tonumber(ARGV[a + 1]), tonumber(ARGV[a + 2]), tonumber(ARGV[a + 3])
  local tat = tonumber(redis.call('GET', KEYS[i]) or now) or now
  if tat < now then tat = now end
  local at = tat - tolerance
  if at < now then at = now end
  local wait = at - now
  if wait <= maxWait then
    local next = tat + t
    redis.call('SET', KEYS[i], string.format('%.0f', next), 'PX', math.ceil((next - now) / 1000) + 1000)
    out[#out + 1] = 1
  else
    out[#out + 1] = 0
  end
  out[#out + 1] = wait
end
return out
