-- Free a reservation, only for its owner, and wake up waiters so that one of them can take it.
-- KEYS[1] record hash
-- ARGV[1] owner token   ARGV[2] wake-up channel   ARGV[3] scope hash (the wake-up message)
local current = redis.call('HMGET', KEYS[1], 'state', 'owner', 'waiters')
if (current[1] ~= 'IN_FLIGHT' and current[1] ~= 'UNCERTAIN') or current[2] ~= ARGV[1] then
  return 0
end
redis.call('DEL', KEYS[1])
if current[3] then
  redis.call('PUBLISH', ARGV[2], ARGV[3])
end
return 1
