-- Puts a record left unsettled by a gateway version without the index of unsettled records into it (once, after
-- an upgrade). A record that settled meanwhile is left out; one already indexed keeps its entry.
-- KEYS[1] record hash   KEYS[2] IN_FLIGHT index   KEYS[3] UNCERTAIN index of the record's slot
-- ARGV[1] scope hash
-- Returns 1 when the record was added, else 0.
-- The call, by name (StoreScripts in Java; ScriptContractTest holds the two together):
-- keys: record, in_flight, uncertain
-- argv: scope_hash
-- include: now.lua
local now = now_ms()
local current = redis.call('HMGET', KEYS[1], 'state', 'reserved_at', 'uncertain_at')
if current[1] == 'IN_FLIGHT' then
  return redis.call('ZADD', KEYS[2], 'NX', current[2] or now, ARGV[1])
elseif current[1] == 'UNCERTAIN' then
  return redis.call('ZADD', KEYS[3], 'NX', current[3] or now, ARGV[1])
end
return 0
