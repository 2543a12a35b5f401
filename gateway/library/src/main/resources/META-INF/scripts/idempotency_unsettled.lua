-- The unsettled records of some slots, from their indexes: what the record counts and the operator's queue read
-- instead of a SCAN of every record. One slot per call on a Redis Cluster; many on a single Redis.
-- KEYS, per slot, three: IN_FLIGHT index, UNCERTAIN index, pending processes (sorted sets of scope hashes)
-- ARGV[1] 'count' or 'list'   ARGV[2] record key prefix ('idempotency:{')
-- count: ARGV[3] pending after, in ms. Members whose record is gone (its TTL ended) or is no longer in the index's
--   state are dropped on the way, so a count costs O(unsettled records) and stays true.
--   Returns {IN_FLIGHT, UNCERTAIN, IN_FLIGHT reserved before now - pending after, pending processes}.
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
if ARGV[1] == 'count' then
  local inFlight, uncertain, pending, processes = 0, 0, 0, 0
  for i = 1, #KEYS, 3 do
    -- Most slots hold nothing unsettled: one call tells.
    if redis.call('EXISTS', KEYS[i], KEYS[i + 1], KEYS[i + 2]) > 0 then
      prune(KEYS[i], 'IN_FLIGHT')
      prune(KEYS[i + 1], 'UNCERTAIN')
      inFlight = inFlight + redis.call('ZCARD', KEYS[i])
      uncertain = uncertain + redis.call('ZCARD', KEYS[i + 1])
      pending = pending + redis.call('ZCOUNT', KEYS[i], '-inf', now - tonumber(ARGV[3]))
      processes = processes + redis.call('ZCARD', KEYS[i + 2])
    end
  end
  return {inFlight, uncertain, pending, processes}
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
