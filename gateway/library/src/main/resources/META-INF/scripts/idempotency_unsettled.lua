-- The unsettled records of some slots, from their indexes: what the record counts and the operator's queue read
-- instead of a SCAN of every record. One slot per call on a Redis Cluster; many on a single Redis.
-- KEYS, per slot, three: IN_FLIGHT index, UNCERTAIN index, pending processes (sorted sets of scope hashes)
-- ARGV[1] 'count' or 'list'   ARGV[2] record key prefix ('idempotency:{')
-- count: ARGV[3] pending after, in ms. Members whose record is gone (its TTL ended) or is no longer in the index's
--   state are dropped on the way, so a count costs O(unsettled records) and stays true.
--   Returns {IN_FLIGHT, UNCERTAIN, IN_FLIGHT reserved before now - pending after, pending processes, and the ages in
--   ms by this Redis's clock of the oldest IN_FLIGHT, oldest UNCERTAIN and oldest pending process (0 when none)}.
--   The ages cost one ZRANGE per index; the pending processes' one HGET per process (the queue is by poll time).
-- list: ARGV[3] most scope hashes per state. Returns {IN_FLIGHT scope hashes..., '', UNCERTAIN scope hashes...}.
-- processes: for each slot whose pending processes are not empty, its key and the earliest poll time (ms):
--   {key, time, key, time...}; what the process queue's directory must name (RedisProcessQueue.restoreDirectory).
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
  for i = 1, #KEYS, 3 do
    -- Most slots hold nothing unsettled: one call tells.
    if redis.call('EXISTS', KEYS[i], KEYS[i + 1], KEYS[i + 2]) > 0 then
      prune(KEYS[i], 'IN_FLIGHT')
      prune(KEYS[i + 1], 'UNCERTAIN')
      inFlight = inFlight + redis.call('ZCARD', KEYS[i])
      uncertain = uncertain + redis.call('ZCARD', KEYS[i + 1])
      pending = pending + redis.call('ZCOUNT', KEYS[i], '-inf', now - tonumber(ARGV[3]))
      processes = processes + redis.call('ZCARD', KEYS[i + 2])
      inFlightAge = math.max(inFlightAge, oldest(KEYS[i]))
      uncertainAge = math.max(uncertainAge, oldest(KEYS[i + 1]))
      processAge = math.max(processAge, oldestProcess(KEYS[i + 2]))
    end
  end
  return {inFlight, uncertain, pending, processes, inFlightAge, uncertainAge, processAge}
end
if ARGV[1] == 'processes' then
  local reply = {}
  for i = 3, #KEYS, 3 do
    local first = redis.call('ZRANGE', KEYS[i], 0, 0, 'WITHSCORES')
    if #first > 0 then
      reply[#reply + 1] = KEYS[i]
      reply[#reply + 1] = first[2]
    end
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
