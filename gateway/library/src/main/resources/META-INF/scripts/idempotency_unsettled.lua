-- The unsettled records of some slots, from their indexes: what the record counts and the operator's queue read
-- instead of a SCAN of every record. One slot per call on a Redis Cluster; many on a single Redis.
-- KEYS, per slot, three: IN_FLIGHT index, UNCERTAIN index, pending processes (sorted sets of scope hashes)
-- ARGV[1] 'count' or 'list'   ARGV[2] record key prefix ('idempotency:{')
-- count: ARGV[3] pending after, in ms. Returns the totals of lib/unsettled_count.lua over the slots: {IN_FLIGHT,
--   UNCERTAIN, IN_FLIGHT reserved before now - pending after, pending processes, and the ages in ms by this Redis's
--   clock of the oldest IN_FLIGHT, oldest UNCERTAIN and oldest pending process (0 when none)}.
-- list: ARGV[3] most scope hashes per state. Returns {IN_FLIGHT scope hashes..., '', UNCERTAIN scope hashes...}.
-- processes: for each slot whose pending processes are not empty, its key and the earliest poll time (ms):
--   {key, time, key, time...}; what the process queue's directory must name (RedisProcessQueue.restoreDirectory).
-- The call, by name (StoreScripts in Java; ScriptContractTest holds the two together):
-- keys: slot_keys...
-- argv: operation, record_prefix, limit
-- include: now.lua
-- include: unsettled_count.lua
-- include: earliest_process.lua
local now = now_ms()
if ARGV[1] == 'count' then
  local totals = {0, 0, 0, 0, 0, 0, 0}
  for i = 1, #KEYS, 3 do
    count_slot(totals, KEYS[i], KEYS[i + 1], KEYS[i + 2], ARGV[2], tonumber(ARGV[3]), now)
  end
  return totals
end
if ARGV[1] == 'processes' then
  local reply = {}
  for i = 3, #KEYS, 3 do
    add_earliest(reply, KEYS[i])
  end
  return reply
end
local limit = tonumber(ARGV[3])
local inFlight, uncertain = {}, {}
local function take(index, into)
  if #into < limit then
    for _, scope in ipairs(redis.call('ZRANGE', index, 0, limit - #into - 1)) do
      into[#into + 1] = scope
    end
  end
end
for i = 1, #KEYS, 3 do
  -- Most slots hold nothing unsettled: one call tells.
  if redis.call('EXISTS', KEYS[i], KEYS[i + 1]) > 0 then
    take(KEYS[i], inFlight)
    take(KEYS[i + 1], uncertain)
  end
end
local reply = inFlight
reply[#reply + 1] = ''
for _, scope in ipairs(uncertain) do
  reply[#reply + 1] = scope
end
return reply
