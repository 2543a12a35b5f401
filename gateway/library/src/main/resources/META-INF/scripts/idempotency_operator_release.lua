-- Operator: free an unsettled record (IN_FLIGHT or UNCERTAIN) so the next retry is forwarded.
-- A completed record is never freed this way: its result exists and is replayed.
-- KEYS[1] record hash   KEYS[2] IN_FLIGHT index   KEYS[3] UNCERTAIN index of the record's slot
-- ARGV[1] wake-up channel   ARGV[2] scope hash   ARGV[3] '1' to SPUBLISH the wake-up
-- Returns the state the record was in, or 'ABSENT'.
local current = redis.call('HMGET', KEYS[1], 'state', 'waiters')
if not current[1] then
  return 'ABSENT'
end
if current[1] ~= 'IN_FLIGHT' and current[1] ~= 'UNCERTAIN' then
  return current[1]
end
redis.call('DEL', KEYS[1])
redis.call('ZREM', KEYS[2], ARGV[2])
redis.call('ZREM', KEYS[3], ARGV[2])
if current[2] then
  redis.call(ARGV[3] == '1' and 'SPUBLISH' or 'PUBLISH', ARGV[1], ARGV[2])
end
return current[1]
