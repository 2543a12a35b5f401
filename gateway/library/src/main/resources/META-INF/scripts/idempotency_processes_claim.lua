-- Claim the pending processes of one slot whose status poll is due: each is pushed back by the claim's lease, so
-- that no other gateway instance polls it meanwhile, and comes back to the queue by itself if this one dies.
-- KEYS[1] pending processes of one slot
-- ARGV[1] most entries to claim   ARGV[2] lease in ms
-- Returns {now, earliest next poll time left in the slot or '' when it is empty, claimed scope hashes...}.
-- The call, by name (StoreScripts in Java; ScriptContractTest holds the two together):
-- keys: queue
-- argv: most, lease_ms
-- reply: now, earliest, scope_hashes...
-- include: now.lua
local now = now_ms()
local due = redis.call('ZRANGEBYSCORE', KEYS[1], '-inf', now, 'LIMIT', 0, tonumber(ARGV[1]))
for _, scope in ipairs(due) do
  redis.call('ZADD', KEYS[1], now + tonumber(ARGV[2]), scope)
end
local first = redis.call('ZRANGE', KEYS[1], 0, 0, 'WITHSCORES')
local reply = {tostring(now), first[2] or ''}
for _, scope in ipairs(due) do
  reply[#reply + 1] = scope
end
return reply
