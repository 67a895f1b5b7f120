-- Block-list check and duplicate-content mark of one send, in one step (SPEC §8).
-- KEYS[1]   the recipient's block list: hash of channel (or "*") -> entry JSON
-- KEYS[2]   optional: the duplicate-content mark of (recipient, channel, body hash)
-- ARGV[1]   the send's channel
-- ARGV[2]   member: the send's messageId
-- ARGV[3]   duplicate window, ms (used with KEYS[2])
-- Returns { 1, field, entry } opted out | { 2, first member, ms left } duplicate
-- | { 0, mark } clear, mark: 0 none asked, 1 made now, 2 already this member's (a retry).
local listed = redis.call('HMGET', KEYS[1], ARGV[1], '*')
if listed[1] then return { 1, ARGV[1], listed[1] } end
if listed[2] then return { 1, '*', listed[2] } end
if #KEYS < 2 then return { 0, 0 } end
if redis.call('SET', KEYS[2], ARGV[2], 'NX', 'PX', ARGV[3]) then return { 0, 1 } end
local first = redis.call('GET', KEYS[2])
-- the same messageId again is a retry of the send that made the mark, not a duplicate
if first == ARGV[2] then return { 0, 2 } end
return { 2, first, redis.call('PTTL', KEYS[2]) }
