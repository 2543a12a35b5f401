-- Operator: free an unsettled record (IN_FLIGHT or UNCERTAIN) so the next retry is forwarded.
-- A completed record is never freed this way: its result exists and is replayed.
-- The former owner may still be forwarding the request: it is named among the scope's released owners as
-- 'operator' (see idempotency_release.lua), so that its late complete is refused (fenced) instead of writing the
-- record anew as if Redis had lost it, and its late reserve cannot take the key. That lasts as long as the record
-- itself would have lived (its owner could complete it until then; after that a vanished record is written anew
-- anyway), and at least ARGV[4].
-- KEYS[1] record hash   KEYS[2] IN_FLIGHT index   KEYS[3] UNCERTAIN index of the record's slot
-- KEYS[4] the owners released from the scope (same hash tag)
-- ARGV[1] wake-up channel   ARGV[2] scope hash   ARGV[3] '1' to SPUBLISH the wake-up
-- ARGV[4] how long the released owners live at least, in ms
-- Returns the state the record was in, or 'ABSENT'.
-- The call, by name (StoreScripts in Java; ScriptContractTest holds the two together):
-- keys: record, in_flight, uncertain, released_owners
-- argv: wake_up_channel, wake_up_message, wake_up_sharded, released_owners_ttl_ms
-- include: wake_up.lua
-- include: operator_settleable.lua
local current = redis.call('HMGET', KEYS[1], 'state', 'waiters', 'owner')
local refused = not_settleable(current[1])
if refused then
  return refused
end
local fenced = math.max(redis.call('PTTL', KEYS[1]), tonumber(ARGV[4]))
redis.call('DEL', KEYS[1])
if current[3] then
  redis.call('HSET', KEYS[4], current[3], 'operator')
  if redis.call('PTTL', KEYS[4]) < fenced then
    redis.call('PEXPIRE', KEYS[4], fenced)
  end
end
redis.call('ZREM', KEYS[2], ARGV[2])
redis.call('ZREM', KEYS[3], ARGV[2])
wake_up(current[2], ARGV[1], ARGV[2], ARGV[3])
return current[1]
