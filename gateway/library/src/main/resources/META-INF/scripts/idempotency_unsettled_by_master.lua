#!lua flags=allow-cross-slot-keys
-- The unsettled records of many slots of one Redis Cluster master in one call (Redis 7 and later), where
-- idempotency_unsettled.lua takes one call per slot. The flag lets a script touch keys of several slots, still only
-- those its master owns: a slot that has moved away (or is being moved) fails the whole call, "non local key", and
-- the caller reads that call's slots one by one instead. Not no-writes: a count prunes, as idempotency_unsettled.lua.
-- KEYS[1] one key of the slots: routes the call to their master (the declared keys must share one slot)
-- ARGV[1] 'count' or 'list'   ARGV[2] record key prefix ('idempotency:{')
-- ARGV[3] count: pending after, in ms; list: most scope hashes per state and slot
-- ARGV[4], ARGV[5], ARGV[6] the key prefixes, up to the slot tag, of a slot's IN_FLIGHT index, UNCERTAIN index and
--   pending processes ('idempotency-in-flight:{' ...); each key is its prefix, the slot tag and '}'
-- ARGV[7]... the slots' tags
-- count: the sums of what idempotency_unsettled.lua returns for each slot (of the ages: the greatest).
-- processes: as idempotency_unsettled.lua, {pending processes key, earliest poll time...} of the slots holding any.
-- list: for each slot holding any, {IN_FLIGHT scope hashes..., '', UNCERTAIN scope hashes..., ''}: the replies of
--   one call per slot, in the slots' order.
-- The call, by name (StoreScripts in Java; ScriptContractTest holds the two together):
-- keys: first_slot_key
-- argv: operation, record_prefix, limit, in_flight_prefix, uncertain_prefix, queue_prefix, tags...
-- include: now.lua
-- include: unsettled_count.lua
-- include: earliest_process.lua
local now = now_ms()
if ARGV[1] == 'count' then
  local totals = {0, 0, 0, 0, 0, 0, 0}
  for i = 7, #ARGV do
    count_slot(totals, ARGV[4] .. ARGV[i] .. '}', ARGV[5] .. ARGV[i] .. '}', ARGV[6] .. ARGV[i] .. '}', ARGV[2],
      tonumber(ARGV[3]), now)
  end
  return totals
end
if ARGV[1] == 'processes' then
  local reply = {}
  for i = 7, #ARGV do
    local processesKey = ARGV[6] .. ARGV[i] .. '}'
    add_earliest(reply, processesKey)
  end
  return reply
end
local limit = tonumber(ARGV[3])
local reply = {}
local function take(index)
  if limit > 0 then
    for _, scope in ipairs(redis.call('ZRANGE', index, 0, limit - 1)) do
      reply[#reply + 1] = scope
    end
  end
end
for i = 7, #ARGV do
  local inFlightKey = ARGV[4] .. ARGV[i] .. '}'
  local uncertainKey = ARGV[5] .. ARGV[i] .. '}'
  if redis.call('EXISTS', inFlightKey, uncertainKey) > 0 then
    take(inFlightKey)
    reply[#reply + 1] = ''
    take(uncertainKey)
    reply[#reply + 1] = ''
  end
end
return reply
