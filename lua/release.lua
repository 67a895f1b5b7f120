-- Gives back what one msg claimed in this store (SPEC §5: a send refused later
-- in the chain, or whose provider failed, consumes nothing).
-- KEYS[i]   a counter (sorted set) or a duplicate-content mark (string)
-- ARGV[1]   member: the msg's messageId
-- ARGV[i+1] "z" for a counter, "k" for a mark
-- Returns how many claims were given back. A mark made by another msg is left alone.
local member = ARGV[1]
local given = 0
for i = 1, #KEYS do
  if ARGV[i + 1] == 'z' then
    given = given + redis.call('ZREM', KEYS[i], member)
  elseif redis.call('GET', KEYS[i]) == member then
    given = given + redis.call('DEL', KEYS[i])
  end
end
return given
