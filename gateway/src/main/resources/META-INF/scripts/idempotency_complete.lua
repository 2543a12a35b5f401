-- Store the final response, only for the owner of the reservation, and wake up waiters.
-- KEYS[1] record hash
-- ARGV[1] owner token   ARGV[2] encoded response   ARGV[3] retention in ms
-- ARGV[4] now in epoch ms   ARGV[5] wake-up channel   ARGV[6] scope hash (the wake-up message)
local current = redis.call('HMGET', KEYS[1], 'state', 'owner', 'waiters')
if current[1] ~= 'IN_FLIGHT' or current[2] ~= ARGV[1] then
  return 0
end
redis.call('HSET', KEYS[1], 'state', 'COMPLETED', 'response', ARGV[2], 'completed_at', ARGV[4])
redis.call('HDEL', KEYS[1], 'owner', 'waiters')
redis.call('PEXPIRE', KEYS[1], ARGV[3])
if current[3] then
  redis.call('PUBLISH', ARGV[5], ARGV[6])
end
return 1
