-- Settle an UNCERTAIN record by what its upstream answered to a lookup (reconciliation), or look it up again later.
-- A compare-and-set: only the record as it was claimed (UNCERTAIN, same owner, uncertain since the same moment) is
-- changed. An operator, the owner's own late answer or a new request may have settled it meanwhile; a record that is
-- no longer UNCERTAIN with lookup values leaves the queue, a new UNCERTAIN record of the scope keeps its entry.
-- KEYS[1] record hash   KEYS[2] IN_FLIGHT index   KEYS[3] UNCERTAIN index   KEYS[4] the owners released from the
-- scope   KEYS[5] the records of the slot to look up   KEYS[6] pending processes of the slot (all in the record's
-- slot)   KEYS[7] the process directory, KEYS[8] the process link: for 'found' with a process on one Redis only
-- ARGV[1] 'found', 'not-found', 'failed' or 'drop' (the claimed record cannot be looked up: it leaves the queue)
-- ARGV[2] owner token as claimed   ARGV[3] uncertain_at as claimed   ARGV[4] scope hash
-- 'found':     ARGV[5] encoded response   ARGV[6] status   ARGV[7] retention in ms (the hard cap while a process
--              runs)   ARGV[8] who   ARGV[9] why   ARGV[10] the unfinished process the answer names, '' when none
--              ARGV[11] its first poll delay in ms   ARGV[12] the record's slot tag (its entry in the directory)
--              COMPLETED, replayed from now on; the owner token goes, so the owner's late complete is not its own;
--              a process is queued for its polls (and linked, with KEYS[7] and KEYS[8]) as idempotency_complete.lua
--              queues a stored 202's
-- 'not-found': ARGV[5] how long the released owners live at least, in ms
--              deleted, so a retry is forwarded; the owner is fenced as by an operator's release (its late complete
--              is refused, its late reserve too) for as long as the record would have lived
-- 'failed':    ARGV[5] first retry delay in ms   ARGV[6] longest retry delay in ms: due again after twice the last
--              delay, at most the longest
-- Returns 1 done (for 'failed': the delay in ms), 0 the record is no longer as claimed: nothing changed.
-- The call, by name (StoreScripts in Java; ScriptContractTest holds the two together):
-- keys: slot_record, slot_in_flight, slot_uncertain, slot_released_owners, slot_lookups, slot_processes
-- keys found: [directory, link]
-- argv found: owner, uncertain_at, scope_hash, response, status, retention_ms, who, why, process_id, first_poll_ms,
-- argv found: slot_tag
-- argv not-found: owner, uncertain_at, scope_hash, released_owners_ttl_ms
-- argv failed: owner, uncertain_at, scope_hash, first_delay_ms, max_delay_ms
-- argv drop: owner, uncertain_at, scope_hash
-- include: now.lua
-- include: process_queue.lua
local now = now_ms()
local current = redis.call('HMGET', KEYS[1], 'state', 'owner', 'uncertain_at', 'lookup_after', 'lookup_delay')
if current[1] ~= 'UNCERTAIN' or current[2] ~= ARGV[2] or current[3] ~= ARGV[3] then
  if current[1] ~= 'UNCERTAIN' or not current[4] then
    redis.call('ZREM', KEYS[5], ARGV[4])
  end
  return 0
end
local op = ARGV[1]
if op == 'failed' then
  local delay = tonumber(current[5])
  if delay then
    delay = math.min(2 * delay, tonumber(ARGV[6]))
  else
    delay = tonumber(ARGV[5])
  end
  redis.call('HSET', KEYS[1], 'lookup_delay', delay)
  redis.call('ZADD', KEYS[5], now + delay, ARGV[4])
  return delay
end
redis.call('ZREM', KEYS[5], ARGV[4])
if op == 'drop' then
  return 1
end
redis.call('ZREM', KEYS[2], ARGV[4])
redis.call('ZREM', KEYS[3], ARGV[4])
if op == 'found' then
  redis.call('HSET', KEYS[1], 'state', 'COMPLETED', 'response', ARGV[5], 'status', ARGV[6], 'completed_at', now,
    'resolved_by', ARGV[8], 'resolved_reason', ARGV[9], 'resolved_at', now)
  redis.call('HDEL', KEYS[1], 'owner', 'waiters', 'lease_until', 'lookup', 'lookup_delay')
  redis.call('PEXPIRE', KEYS[1], ARGV[7])
  if ARGV[10] ~= '' then
    queue_process(KEYS[1], KEYS[6], KEYS[7], KEYS[8], ARGV[10], ARGV[11], ARGV[4], ARGV[12], ARGV[7], now)
  end
  return 1
end
if op == 'not-found' then
  local fenced = math.max(redis.call('PTTL', KEYS[1]), tonumber(ARGV[5]))
  redis.call('DEL', KEYS[1])
  redis.call('HSET', KEYS[4], ARGV[2], 'operator')
  if redis.call('PTTL', KEYS[4]) < fenced then
    redis.call('PEXPIRE', KEYS[4], fenced)
  end
  return 1
end
return redis.error_reply('unknown operation ' .. tostring(op))
