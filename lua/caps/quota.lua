-- Calls on total caps' shared counters (SPEC §4 counts "total"), many in one call, in order.
-- src/core/totals/quotaStep.ts is the same algorithm; read it for the why.
-- KEYS      per item two: the counter hash (b<start> = sends counted in that time bucket,
--           l<leaseId> = "<held>,<expiresMs>", m = the limit it last saw), and the sorted set of
--           the spends given back (member: spend id, score: when it was spent), so each is given
--           back once
-- ARGV      per item, 12 values: leaseId ("" = read only), leaseMs, max, windowMs (0 = lifetime,
--           calendar: the period's length; -1 = the limit saved in field m: a give-back knows only
--           the key), bucketMs, calendar (1: periods of windowMs from 00:00 UTC, a week's from
--           Monday, by this server's TIME, never the caller's clock; 0: rolling or lifetime), spend,
--           record, refunds ("bucket:id:atMs,..." spent slots given back into the lease), frees (the
--           same, given back to the pool), keep (slots the caller still holds after its spends: the
--           lease is trimmed to it; -1 = no trim), want
-- Returns { now ms, then per item 11 values: accepted, bucket, granted, refunded, given (per
--           give-back, refunds then frees: "1" taken, "0" not; "" when there were none),
--           lapsed (1/0), held, used, leased, leases, retryAfterMs (-1 = never, -2 = a slot is free) }
local time = redis.call('TIME')
local now = tonumber(time[1]) * 1000 + math.floor(tonumber(time[2]) / 1000)
local LEASE_SHARE = 4
local GIVE_BACK_HORIZON_MS = 86400000
-- 1970-01-05T00:00Z, a Monday: calendar periods start on it plus whole periods (src/core/totals/totalPeriod.ts)
local PERIOD_EPOCH_MS = 345600000

local function fmt(n) return string.format('%.0f', n) end

local function numbers(packed)
  local out = {}
  for v in string.gmatch(packed, '[^,]+') do out[#out + 1] = tonumber(v) end
  return out
end

local function giveBacks(packed)
  local out = {}
  for b, id, at in string.gmatch(packed, '([^,:]+):([^,:]+):([^,:]+)') do
    out[#out + 1] = { bucket = tonumber(b), id = id, at = tonumber(at) }
  end
  return out
end

-- When another holder's unspent slots may come back: its holder names its leaseMs in its id
-- ("<hex>~<ms>"), and a holder without sends hands its unspent slots back a third of it (up to 1 s)
-- after its last call (src/core/totals/quotaStep.ts leaseIdleMs), far sooner than its lease expires.
-- An id without it: at its expiry. (The lease is not taken from it then: slots its sends reserved
-- stay theirs while their recipients' caps answer.)
local function idleFrom(field, expires)
  local ms = tonumber(string.match(field, '~(%d+)$'))
  if not ms then return expires end
  return math.min(expires, expires - ms + math.min(1000, math.max(50, math.floor(ms / 3))))
end

local function step(key, givenKey, a)
  local leaseId = ARGV[a + 1]
  local leaseMs, max, windowMs, bucketMs = tonumber(ARGV[a + 2]), tonumber(ARGV[a + 3]), tonumber(ARGV[a + 4]), tonumber(ARGV[a + 5])
  local calendar = tonumber(ARGV[a + 6]) > 0
  local spend, record = tonumber(ARGV[a + 7]), tonumber(ARGV[a + 8])
  local refunds, frees = giveBacks(ARGV[a + 9]), giveBacks(ARGV[a + 10])
  local keep, want = tonumber(ARGV[a + 11]), tonumber(ARGV[a + 12])

  if windowMs < 0 then
    local saved = redis.call('HGET', key, 'm')
    if not saved then return { 0, 0, 0, 0, string.rep('0', #refunds + #frees), 1, 0, 0, 0, 0, -1 } end
    -- "max,windowMs,bucketMs,calendar"; a counter saved with its caller's period has "…,periodStart,periodEnd",
    -- whose fourth value is above 0 exactly when it was a calendar limit, so it reads the same
    local v = numbers(saved)
    max, windowMs, bucketMs, calendar = v[1], v[2], v[3], (v[4] or 0) > 0
  end

  -- the store's period: callers whose clocks disagree around midnight all count into it, and none prunes it
  local periodStart, periodEnd = 0, 0
  if calendar and windowMs > 0 then
    periodStart = now - (now - PERIOD_EPOCH_MS) % windowMs
    periodEnd = periodStart + windowMs
  end

  local function counts(bucket)
    if windowMs == 0 then return true end
    -- earlier periods are dropped; the current one and any later one count (a server clock that stepped back
    -- keeps what it counted)
    if periodStart > 0 then return bucket >= periodStart end
    return bucket + bucketMs > now - windowMs
  end

  local used, leased, leases = 0, 0, 0
  local own = nil
  local soonest = math.huge
  local ownField = 'l' .. leaseId
  local all = redis.call('HGETALL', key)
  for j = 1, #all, 2 do
    local field, value = all[j], all[j + 1]
    local kind = string.sub(field, 1, 1)
    if kind == 'b' then
      local bucket = tonumber(string.sub(field, 2))
      if not counts(bucket) then
        redis.call('HDEL', key, field)
      else
        local n = tonumber(value)
        used = used + n
        if n > 0 and windowMs > 0 and periodStart == 0 then
          soonest = math.min(soonest, bucket + bucketMs + windowMs - now)
        end
      end
    elseif kind == 'l' then
      local comma = string.find(value, ',', 1, true)
      local held, expires = tonumber(string.sub(value, 1, comma - 1)), tonumber(string.sub(value, comma + 1))
      if expires <= now then
        redis.call('HDEL', key, field)
      elseif field == ownField then
        own = held
      else
        leased = leased + held
        leases = leases + 1
        -- past it, its holder did not hand them back (its sends still use them): at its expiry
        local from = idleFrom(field, expires)
        if from <= now then from = expires end
        soonest = math.min(soonest, from - now)
      end
    end
  end

  local lapsed = 0
  if own == nil then lapsed = 1 end
  -- a lease never holds more than the max leaves it (the max was lowered, or another lease refilled the pool)
  local held = math.min(own or 0, math.max(0, max - used - leased))
  local bucket = 0
  if windowMs > 0 then
    if periodStart > 0 then bucket = periodStart else bucket = math.floor(now / bucketMs) * bucketMs end
  end
  local function add(b, n)
    local field = 'b' .. fmt(b)
    local after = redis.call('HINCRBY', key, field, n)
    if after <= 0 then redis.call('HDEL', key, field) end
  end

  -- spends from the lease first; past it (a lapsed lease), only what the pool still has
  local fromLease = math.min(spend, held)
  held = held - fromLease
  -- what came from the lease is counted before the pool is asked for the rest
  used = used + fromLease
  local fresh = math.min(spend - fromLease, math.max(0, max - used - leased - held))
  local accepted = fromLease + fresh
  used = used + fresh + record
  if accepted + record > 0 then add(bucket, accepted + record) end
  if keep >= 0 and leaseId ~= '' then held = math.min(held, keep) end
  if #refunds + #frees > 0 then
    redis.call('ZREMRANGEBYSCORE', givenKey, '-inf', '(' .. fmt(now - GIVE_BACK_HORIZON_MS))
  end
  local function giveBackOne(g)
    local n = tonumber(redis.call('HGET', key, 'b' .. fmt(g.bucket)) or '0')
    if n <= 0 or not counts(g.bucket) or g.at < now - GIVE_BACK_HORIZON_MS then return false end
    if redis.call('ZADD', givenKey, 'NX', g.at, g.id) == 0 then return false end
    add(g.bucket, -1)
    used = used - 1
    return true
  end
  local refunded, taken = 0, {}
  for _, g in ipairs(refunds) do
    if giveBackOne(g) then
      taken[#taken + 1] = '1'
      -- back into the lease up to a grant's share of what is free, the rest to the pool: a burst of
      -- refunds does not strand the total on this instance while the others refuse
      if leaseId ~= '' and held < math.max(1, math.floor((max - used - leased) / LEASE_SHARE)) then
        held = held + 1
        refunded = refunded + 1
      end
    else
      taken[#taken + 1] = '0'
    end
  end
  for _, g in ipairs(frees) do
    if giveBackOne(g) then taken[#taken + 1] = '1' else taken[#taken + 1] = '0' end
  end
  local given = table.concat(taken)
  if string.find(given, '1', 1, true) then redis.call('PEXPIRE', givenKey, GIVE_BACK_HORIZON_MS + 60000) end
  local granted = 0
  if want > 0 and leaseId ~= '' then
    local left = max - used - leased - held
    if left > 0 then granted = math.min(want, left, math.max(1, math.floor(left / LEASE_SHARE))) end
    held = held + granted
  end
  if leaseId ~= '' then
    if held > 0 then
      redis.call('HSET', key, ownField, fmt(held) .. ',' .. fmt(now + leaseMs))
    else
      redis.call('HDEL', key, ownField)
    end
  end
  if held > 0 then leases = leases + 1 end
  leased = leased + held

  if used > 0 or leased > 0 then
    local flag = '0'
    if periodStart > 0 then flag = '1' end
    redis.call('HSET', key, 'm', fmt(max) .. ',' .. fmt(windowMs) .. ',' .. fmt(bucketMs) .. ',' .. flag)
    if windowMs == 0 then
      redis.call('PERSIST', key)
    else
      local untilMs = windowMs + bucketMs
      if periodStart > 0 then untilMs = periodEnd - now end
      redis.call('PEXPIRE', key, math.max(untilMs, 0) + leaseMs + 60000)
    end
  else
    redis.call('HDEL', key, 'm')
  end

  local retry = -2
  if max - used - leased <= 0 then
    if windowMs > 0 and periodStart > 0 then soonest = math.min(soonest, periodEnd - now) end
    if soonest == math.huge then retry = -1 else retry = math.max(0, soonest) end
  end
  return { accepted, bucket, granted, refunded, given, lapsed, held, used, leased, leases, retry }
end

local out = { now }
for i = 1, #KEYS / 2 do
  local answer = step(KEYS[2 * i - 1], KEYS[2 * i], 12 * (i - 1))
  for j = 1, 11 do out[#out + 1] = answer[j] end
end
return out
