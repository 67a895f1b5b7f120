-- Gives back reservations of throughput ceilings (SPEC §8): the msgs held for them
-- were dropped (msg.reset), so the instants they reserved are free again.
-- KEYS[i]   the ceiling of item i (as in gcra.lua)
-- ARGV      per item: emission interval T (µs), how many reservations to give back, the
--           latest one's instant (µs), tolerance τ (µs)
-- TAT = max(now, TAT - n * T): never into the past, where it would let a burst
-- through that the ceiling did not allow; and only when nothing was reserved after the
-- latest given back (TAT <= last + τ + T): another msg's later instant stays its own.
-- A ceiling that is gone stays gone.
-- Returns { now µs, per item: the TAT after, µs (0: no state) }.
local time = redis.call('TIME')
local now = tonumber(time[1]) * 1000000 + tonumber(time[2])
local out = { now }
for i = 1, #KEYS do
  local t, n = tonumber(ARGV[4 * i - 3]), tonumber(ARGV[4 * i - 2])
  local last, tau = tonumber(ARGV[4 * i - 1]), tonumber(ARGV[4 * i])
  local tat = tonumber(redis.call('GET', KEYS[i]) or '')
  if tat and tat > last + tau + t then
    out[#out + 1] = tat
  elseif tat then
    local back = tat - n * t
    if back < now then back = now end
    redis.call('SET', KEYS[i], string.format('%.0f', back), 'PX', math.ceil((back - now) / 1000) + 1000)
    out[#out + 1] = back
  else
    out[#out + 1] = 0
  end
end
return out
