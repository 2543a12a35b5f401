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
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local function prune(index, state)
  for _, scope in ipairs(redis.call('ZRANGE', index, 0, -1)) do
    if redis.call('HGET', ARGV[2] .. scope .. '}', 'state') ~= state then
      redis.call('ZREM', index, scope)
    end
  end
end
-- How long ago the oldest member of an index entered it (ms, by this Redis's clock), or 0 when it is empty.
local function oldest(index)
  local first = redis.call('ZRANGE', index, 0, 0, 'WITHSCORES')
  return #first > 0 and math.max(0, now - tonumber(first[2])) or 0
end
-- The process queue is by next poll time: a process is pending since its record was completed (the 202 stored).
-- Members whose record is gone are left to the poll that finds it gone.
local function oldestProcess(queue)
  local age = 0
  for _, scope in ipairs(redis.call('ZRANGE', queue, 0, -1)) do
    local completedAt = tonumber(redis.call('HGET', ARGV[2] .. scope .. '}', 'completed_at'))
    if completedAt then
      age = math.max(age, now - completedAt)
    end
  end
  return age
end
if ARGV[1] == 'count' then
  local inFlight, uncertain, pending, processes = 0, 0, 0, 0
  local inFlightAge, uncertainAge, processAge = 0, 0, 0
  for i = 7, #ARGV do
    local inFlightKey = ARGV[4] .. ARGV[i] .. '}'
    local uncertainKey = ARGV[5] .. ARGV[i] .. '}'
    local processesKey = ARGV[6] .. ARGV[i] .. '}'
    -- Most slots hold nothing unsettled: one call tells (the three keys share the slot).
    if redis.call('EXISTS', inFlightKey, uncertainKey, processesKey) > 0 then
      prune(inFlightKey, 'IN_FLIGHT')
      prune(uncertainKey, 'UNCERTAIN')
      inFlight = inFlight + redis.call('ZCARD', inFlightKey)
      uncertain = uncertain + redis.call('ZCARD', uncertainKey)
      pending = pending + redis.call('ZCOUNT', inFlightKey, '-inf', now - tonumber(ARGV[3]))
      processes = processes + redis.call('ZCARD', processesKey)
      inFlightAge = math.max(inFlightAge, oldest(inFlightKey))
      uncertainAge = math.max(uncertainAge, oldest(uncertainKey))
      processAge = math.max(processAge, oldestProcess(processesKey))
    end
  end
  return {inFlight, uncertain, pending, processes, inFlightAge, uncertainAge, processAge}
end
if ARGV[1] == 'processes' then
  local reply = {}
  for i = 7, #ARGV do
    local processesKey = ARGV[6] .. ARGV[i] .. '}'
    local first = redis.call('ZRANGE', processesKey, 0, 0, 'WITHSCORES')
    if #first > 0 then
      reply[#reply + 1] = processesKey
      reply[#reply + 1] = first[2]
    end
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
