-- The process a stored 202 started has ended: from now on the key is kept for the retention only, and the process
-- leaves the queue of pending processes.
-- KEYS[1] record hash   KEYS[2] pending processes of the record's slot
-- ARGV[1] process id   ARGV[2] terminal status value   ARGV[3] retention in ms   ARGV[4] scope hash
-- Returns 1 recorded now, 0 not this record's pending process (ended already, another process, or no record).
-- The call, by name (StoreScripts in Java; ScriptContractTest holds the two together):
-- keys: record, processes
-- argv: process_id, status, retention_ms, scope_hash
-- include: now.lua
local now = now_ms()
local current = redis.call('HMGET', KEYS[1], 'process_id', 'process_state')
if current[1] ~= ARGV[1] or current[2] ~= 'PENDING' then
  if current[2] ~= 'PENDING' then
    redis.call('ZREM', KEYS[2], ARGV[4])
  end
  return 0
end
redis.call('HSET', KEYS[1], 'process_state', 'ENDED', 'process_status', ARGV[2], 'process_ended_at', now)
redis.call('HDEL', KEYS[1], 'process_poll_delay')
redis.call('PEXPIRE', KEYS[1], ARGV[3])
redis.call('ZREM', KEYS[2], ARGV[4])
return 1
