-- Operator: settle an unsettled record (IN_FLIGHT or UNCERTAIN) with the result reconciled with the backend.
-- The former owner loses it: a late completion from the original request changes nothing afterwards.
-- KEYS[1] record hash   KEYS[2] IN_FLIGHT index   KEYS[3] UNCERTAIN index of the record's slot
-- ARGV[1] encoded response   ARGV[2] status   ARGV[3] retention in ms
-- ARGV[4] who   ARGV[5] why   ARGV[6] wake-up channel   ARGV[7] scope hash   ARGV[8] '1' to SPUBLISH the wake-up
-- Returns the state the record was in, or 'ABSENT'.
-- The call, by name (StoreScripts in Java; ScriptContractTest holds the two together):
-- keys: record, in_flight, uncertain
-- argv: response, status, retention_ms, who, why, wake_up_channel, wake_up_message, wake_up_sharded
-- include: wake_up.lua
-- include: now.lua
-- include: operator_settleable.lua
local now = now_ms()
local current = redis.call('HMGET', KEYS[1], 'state', 'waiters')
local refused = not_settleable(current[1])
if refused then
  return refused
end
redis.call('HSET', KEYS[1], 'state', 'COMPLETED', 'response', ARGV[1], 'status', ARGV[2], 'completed_at', now,
  'resolved_by', ARGV[4], 'resolved_reason', ARGV[5], 'resolved_at', now)
redis.call('HDEL', KEYS[1], 'owner', 'waiters', 'lease_until', 'lookup')
redis.call('ZREM', KEYS[2], ARGV[7])
redis.call('ZREM', KEYS[3], ARGV[7])
redis.call('PEXPIRE', KEYS[1], ARGV[3])
wake_up(current[2], ARGV[6], ARGV[7], ARGV[8])
return current[1]
