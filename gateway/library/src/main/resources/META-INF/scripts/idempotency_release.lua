-- Free a reservation, only for its owner, and wake up waiters so that one of them can take it.
-- Every release names its owner in the scope's released owners (a hash: owner token -> how), which a reserve and a
-- complete of that owner then find:
--   'released'  it freed its own reservation: a retried release whose first attempt did land (its answer was late)
--               recognises it, even once another request has taken the key, instead of being taken for a stranger;
--   'unheld'    it released what it did not hold (no record, or another owner's): its own reserve may still be on
--               its way (re-sent after a reconnect, or overtaken on another connection) and must not create a record
--               that nobody holds;
--   'operator'  written by idempotency_operator_release.lua, never overwritten here.
-- A reserve of a released owner is refused (idempotency_reserve.lua), so is its complete (idempotency_complete.lua).
-- The hash holds every owner released while it lives; each release extends its life, never shortens it.
-- KEYS[1] record hash   KEYS[2] released owners (same hash tag: one slot in a Redis Cluster)
-- KEYS[3] IN_FLIGHT index   KEYS[4] UNCERTAIN index of the record's slot
-- ARGV[1] owner token   ARGV[2] wake-up channel   ARGV[3] scope hash (the wake-up message)
-- ARGV[4] '1' to SPUBLISH the wake-up   ARGV[5] how long the released owners live at least, in ms
-- Returns 1 released, 2 already released by this owner (a retry), 0 not this owner's to release.
-- The call, by name (StoreScripts in Java; ScriptContractTest holds the two together):
-- keys: record, released_owners, in_flight, uncertain
-- argv: owner, wake_up_channel, wake_up_message, wake_up_sharded, released_owners_ttl_ms
-- include: wake_up.lua
local function keep(key, ms)
  if redis.call('PTTL', key) < ms then
    redis.call('PEXPIRE', key, ms)
  end
end
local current = redis.call('HMGET', KEYS[1], 'state', 'owner', 'waiters')
if (current[1] ~= 'IN_FLIGHT' and current[1] ~= 'UNCERTAIN') or current[2] ~= ARGV[1] then
  local released = redis.call('HGET', KEYS[2], ARGV[1])
  if released == 'released' then
    return 2
  end
  if not released then
    redis.call('HSET', KEYS[2], ARGV[1], 'unheld')
  end
  keep(KEYS[2], tonumber(ARGV[5]))
  return 0
end
redis.call('DEL', KEYS[1])
redis.call('ZREM', KEYS[3], ARGV[3])
redis.call('ZREM', KEYS[4], ARGV[3])
redis.call('HSET', KEYS[2], ARGV[1], 'released')
keep(KEYS[2], tonumber(ARGV[5]))
wake_up(current[3], ARGV[2], ARGV[3], ARGV[4])
return 1
