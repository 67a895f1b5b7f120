-- Block-list check and duplicate-content mark of many sends, each in one step (SPEC §8).
-- Per send, one or two KEYS in order: the recipient's block list (hash of channel or "*"
-- -> entry JSON), then, when duplicate suppression is on, the mark of
-- (recipient, channel, body hash).
-- ARGV      per send: number of its keys (1|2; -1: its one key is the mark, the block list was read
--           apart: a slot mid-move on a cluster), channel, mark value (messageId, NUL, this
--           attempt's token: src/core/suppression/markValue.ts), window ms
-- Returns { per send: kind, a, b } where kind 1 opted out (a field, b entry), 2 duplicate
-- (a first member, b ms left), 0 clear (a: 0 no mark asked, 1 made now, 2 already this
-- member's, a retry, and this attempt's own; 3 another attempt's of this member (a copy of the
-- msg), which this attempt now holds too: its token is added to the mark's value, and a
-- give-back removes one token, the mark going with the last; b 0).
-- the messageId of a mark's value (a mark made before tokens is the bare messageId)
local function memberOf(value)
  local at = string.find(value, '\0', 1, true)
  return at and string.sub(value, 1, at - 1) or value
end
-- the token of an attempt's value (messageId NUL token)
local function tokenOf(value)
  local at = string.find(value, '\0', 1, true)
  return at and string.sub(value, at + 1) or ''
end
-- whether a mark's value (messageId, then NUL and a token per attempt holding it) lists `token`
local function hasToken(held, token)
  return string.find(held .. '\0', '\0' .. token .. '\0', 1, true) ~= nil
end
local out = {}
local k, pos = 1, 1
while pos <= #ARGV do
  local nkeys, channel, value, window = tonumber(ARGV[pos]), ARGV[pos + 1], ARGV[pos + 2], ARGV[pos + 3]
  local list, mark
  if nkeys < 0 then
    mark, k = KEYS[k], k + 1
  else
    list, mark = KEYS[k], nkeys > 1 and KEYS[k + 1] or nil
    k = k + nkeys
  end
  pos = pos + 4
  local listed = list and redis.call('HMGET', list, channel, '*') or {}
  local kind, a, b = 0, 0, 0
  if listed[1] then
    kind, a, b = 1, channel, listed[1]
  elseif listed[2] then
    kind, a, b = 1, '*', listed[2]
  elseif mark then
    if redis.call('SET', mark, value, 'NX', 'PX', window) then
      a = 1
    else
      local held = redis.call('GET', mark)
      local first = memberOf(held)
      -- the same messageId again is a retry of the send that made the mark, not a duplicate
      if first ~= memberOf(value) then
        kind, a, b = 2, first, redis.call('PTTL', mark)
      elseif held == first or hasToken(held, tokenOf(value)) then
        -- this attempt's own mark, or one made before tokens (no attempt gives it back)
        a = 2
      else
        redis.call('SET', mark, held .. '\0' .. tokenOf(value), 'KEEPTTL')
        a = 3
      end
    end
  end
  out[#out + 1] = kind
  out[#out + 1] = a
  out[#out + 1] = b
end
return out
