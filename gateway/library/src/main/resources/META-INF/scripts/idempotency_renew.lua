-- Extend the lease of an in-flight reservation while its upstream exchange lasts, only for its owner.
-- KEYS[1] record hash
-- ARGV[1] owner token   ARGV[2] lease in ms
-- The call, by name (StoreScripts in Java; ScriptContractTest holds the two together):
-- keys: record
-- argv: owner, lease_ms
-- include: now.lua
local now = now_ms()
local current = redis.call('HMGET', KEYS[1], 'state', 'owner')
if current[1] ~= 'IN_FLIGHT' or current[2] ~= ARGV[1] then
  return 0
end
redis.call('HSET', KEYS[1], 'lease_until', now + tonumber(ARGV[2]))
return 1
