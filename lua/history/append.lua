-- Adds verdicts to recipients' decision histories, many in one call
-- (src/core/history/decisionHistory.ts). A recipient's history lives in its counter hash
-- (lib/counter_entries.lua historyWrites): no key of its own to create and expire for every
-- recipient, and it lives at least as long as its counters.
-- KEYS[k]   the counter hash of the k-th entry's recipient; a key may come several times
--           (a recipient's msg judged by several gates)
-- ARGV[1]   entries kept per history: at least the newest this many
-- ARGV[2]   ms a history lives after its last write, at least
-- ARGV[3]   the entries, one line each, in the order of KEYS (an entry holds no newline)
-- Returns { entries written }.
-- @include counter_entries
local keep = tonumber(ARGV[1])
local ttl = tonumber(ARGV[2])
local k = 0
for entry in string.gmatch(ARGV[3], '[^\n]+') do
  k = k + 1
  local key = KEYS[k]
  local writes = {}
  historyWrites(writes, 0, redis.call('HGET', key, HISTORY), entry, keep)
  redis.call('HSET', key, unpack(writes))
  -- renewed to 1.5 lifetimes once less than one is left: one PEXPIRE every half lifetime, and never shortened
  -- (a claim's counters may need the hash longer)
  local left = redis.call('PTTL', key)
  if left < ttl then redis.call('PEXPIRE', key, ttl + ttl / 2) end
end
return { k }
