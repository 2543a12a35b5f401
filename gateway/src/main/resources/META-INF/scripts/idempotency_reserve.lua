-- Reserve a scope atomically, or report what holds it. One round trip for every outcome:
-- first write (reserved), replay (the stored response comes back), mismatch, in flight.
-- KEYS[1] record hash
-- ARGV[1] request fingerprint   ARGV[2] owner token   ARGV[3] lease in ms
-- ARGV[4] now in epoch ms      ARGV[5] '1' when the caller will wait for an in-flight record
local current = redis.call('HMGET', KEYS[1], 'state', 'fingerprint')
local state = current[1]
if not state then
  redis.call('HSET', KEYS[1], 'state', 'IN_FLIGHT', 'fingerprint', ARGV[1], 'owner', ARGV[2], 'reserved_at', ARGV[4])
  redis.call('PEXPIRE', KEYS[1], ARGV[3])
  return {'RESERVED'}
end
if current[2] ~= ARGV[1] then
  -- another payload: the stored response is never sent back for it
  return {state, current[2]}
end
if state == 'COMPLETED' then
  return {state, current[2], redis.call('HGET', KEYS[1], 'response')}
end
if ARGV[5] == '1' then
  -- completing or releasing publishes a wake-up only when someone waits
  redis.call('HINCRBY', KEYS[1], 'waiters', 1)
end
return {state, current[2]}
