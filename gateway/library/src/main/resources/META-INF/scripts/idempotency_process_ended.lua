-- The process a stored 202 started has ended: from now on the key is kept for the retention only.
-- KEYS[1] record hash
-- ARGV[1] process id   ARGV[2] terminal status value   ARGV[3] retention in ms
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local current = redis.call('HMGET', KEYS[1], 'process_id', 'process_state')
if current[1] ~= ARGV[1] or current[2] == 'ENDED' then
  return 0
end
redis.call('HSET', KEYS[1], 'process_state', 'ENDED', 'process_status', ARGV[2], 'process_ended_at', now)
redis.call('PEXPIRE', KEYS[1], ARGV[3])
return 1
