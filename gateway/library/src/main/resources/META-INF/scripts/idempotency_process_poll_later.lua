-- A status poll found the process still running (or could not tell): poll it again after twice the last delay, at
-- most the longest delay. A record whose process is no longer pending (ended, gone with its TTL, or replaced by a
-- later record under the same key) leaves the queue instead.
-- KEYS[1] record hash   KEYS[2] pending processes of the record's slot
-- ARGV[1] process id   ARGV[2] longest delay in ms   ARGV[3] scope hash
-- Returns the next delay in ms, or 0 when the process left the queue.
-- The call, by name (StoreScripts in Java; ScriptContractTest holds the two together):
-- keys: record, processes
-- argv: process_id, max_delay_ms, scope_hash
-- include: now.lua
local now = now_ms()
local current = redis.call('HMGET', KEYS[1], 'process_id', 'process_state', 'process_poll_delay')
if current[1] ~= ARGV[1] or current[2] ~= 'PENDING' then
  redis.call('ZREM', KEYS[2], ARGV[3])
  return 0
end
local delay = math.min(2 * (tonumber(current[3]) or 1000), tonumber(ARGV[2]))
redis.call('HSET', KEYS[1], 'process_poll_delay', delay)
redis.call('ZADD', KEYS[2], now + delay, ARGV[3])
return delay
