-- Calls on total caps' shared counters (SPEC §4 counts "total"), many in one call, in order.
-- src/core/totals/quotaStep.ts is the same algorithm; read it for the why.
-- KEYS[i]   the counter hash of item i: b<start> = sends counted in that time bucket,
--           l<leaseId> = "<held>,<expiresMs>", m = the limit it last saw
-- ARGV      per item, 13 values: leaseId ("" = read only), leaseMs, max, windowMs (0 = lifetime,
--           -1 = the limit saved in field m: a give-back knows only the key), bucketMs,
--           periodStartMs (calendar; else 0), periodEndMs, spend, record, refunds ("b1,b2,..."
--           buckets given back into the lease), frees (buckets given back to the pool), giveBack, want
-- Returns { now ms, then per item 10 values: accepted, bucket, granted, refunded, lapsed (1/0),
--           held, used, leased, leases, retryAfterMs (-1 = never, -2 = a slot is free) }
local time = redis.call('TIME')
local now = tonumber(time[1]) * 1000 + math.floor(tonumber(time[2]) / 1000)
local LEASE_SHARE = 4

local function fmt(n) return string.format('%.0f', n) end

local function numbers(packed)
  local out = {}
  for v in string.gmatch(packed, '[^,]+') do out[#out + 1] = tonumber(v) end
  return out
end

local function step(key, a)
  local leaseId = ARGV[a + 1]
  local leaseMs, max, windowMs, bucketMs = tonumber(ARGV[a + 2]), tonumber(ARGV[a + 3]), tonumber(ARGV[a + 4]), tonumber(ARGV[a + 5])
  local periodStart, periodEnd = tonumber(ARGV[a + 6]), tonumber(ARGV[a + 7])
  local spend, record = tonumber(ARGV[a + 8]), tonumber(ARGV[a + 9])
  local refunds, frees = numbers(ARGV[a + 10]), numbers(ARGV[a + 11])
  local giveBack, want = tonumber(ARGV[a + 12]), tonumber(ARGV[a + 13])

  if windowMs < 0 then
    local saved = redis.call('HGET', key, 'm')
    if not saved then return { 0, 0, 0, 0, 1, 0, 0, 0, 0, -1 } end
    local v = numbers(saved)
    max, windowMs, bucketMs, periodStart, periodEnd = v[1], v[2], v[3], v[4], v[5]
  end

  local function counts(bucket)
    if windowMs == 0 then return true end
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
        soonest = math.min(soonest, expires - now)
      end
    end
  end

  local lapsed = 0
  if own == nil then lapsed = 1 end
  local held = own or 0
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
  local fresh = math.min(spend - fromLease, math.max(0, max - used - leased - held))
  local accepted = fromLease + fresh
  local moved = accepted + record
  if moved > 0 then
    add(bucket, moved)
    used = used + moved
  end
  local function giveBackOne(b)
    local n = tonumber(redis.call('HGET', key, 'b' .. fmt(b)) or '0')
    if n <= 0 or not counts(b) then return false end
    add(b, -1)
    used = used - 1
    return true
  end
  local refunded = 0
  for _, b in ipairs(refunds) do
    if giveBackOne(b) and leaseId ~= '' then
      held = held + 1
      refunded = refunded + 1
    end
  end
  for _, b in ipairs(frees) do giveBackOne(b) end
  held = held - math.min(held, giveBack)
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
    redis.call('HSET', key, 'm', fmt(max) .. ',' .. fmt(windowMs) .. ',' .. fmt(bucketMs) .. ',' .. fmt(periodStart) .. ',' .. fmt(periodEnd))
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
  return { accepted, bucket, granted, refunded, lapsed, held, used, leased, leases, retry }
end

local out = { now }
for i = 1, #KEYS do
  local answer = step(KEYS[i], 13 * (i - 1))
  for j = 1, 10 do out[#out + 1] = answer[j] end
end
return out
