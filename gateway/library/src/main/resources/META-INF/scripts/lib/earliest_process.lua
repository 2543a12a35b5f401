-- Adds a slot's pending processes key and its earliest poll time (ms) to the reply, when it holds any: what the
-- process queue's directory must name (RedisProcessQueue.restoreDirectory).
local function add_earliest(reply, processes)
  local first = redis.call('ZRANGE', processes, 0, 0, 'WITHSCORES')
  if #first > 0 then
    reply[#reply + 1] = processes
    reply[#reply + 1] = first[2]
  end
end
