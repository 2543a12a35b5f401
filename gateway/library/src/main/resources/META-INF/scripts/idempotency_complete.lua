-- Store the final response, only for the owner of the reservation, and wake up waiters.
-- The owner may complete an IN_FLIGHT record or one that became UNCERTAIN while it still waited for the
-- upstream: the real answer settles the doubt. A record that vanished (Redis restarted without persistence)
-- is written anew: nobody else can own a record that does not exist. Unless the owner was released from the scope
-- (see idempotency_release.lua): a record an operator freed while its owner still waited for the upstream did not
-- vanish, the next retry is to be forwarded afresh, so the owner's late result is refused (fenced), never written.
-- The owner token stays on the completed record: a retried call whose first attempt did land (its answer was late)
-- recognises its own write and is told so, instead of being taken for a stranger.
-- When the response names an unfinished process, its first status poll is queued in the same step, in the pending
-- processes of the record's slot, where any gateway instance of the fleet finds it: the instance that stored the 202
-- may die at any moment after this script.
-- On a single Redis (and Sentinel) the same step also links the process to the record and brings the fleet's
-- directory of slots forward (KEYS[6], KEYS[7]): a tracked 202 costs one call, like an untracked one. On a Cluster
-- those two keys live in other slots than the record, so the caller writes them in calls of their own.
-- KEYS[1] record hash   KEYS[2] pending processes of the record's slot (sorted set: scope hash by next poll time)
-- KEYS[3] IN_FLIGHT index   KEYS[4] UNCERTAIN index of the record's slot: a settled record leaves them
-- KEYS[5] the owners released from the scope (hash: owner token -> how)
-- KEYS[6] the process directory (sorted set: slot tag by time to look next), KEYS[7] the process link (string):
-- both optional, given together
-- ARGV[1] owner token   ARGV[2] encoded response   ARGV[3] status
-- ARGV[4] ttl in ms (retention, or the hard cap while a linked process is unfinished)
-- ARGV[5] process id, '' when none   ARGV[6] wake-up channel   ARGV[7] scope hash (the wake-up message)
-- ARGV[8] '1' to SPUBLISH the wake-up
-- ARGV[9] for a record written anew, '\n'-separated: fingerprint, operation (the 'route' field), tenant, upstream,
-- strict fingerprint, fingerprint rules, route id (format 2, as idempotency_reserve.lua writes it)
-- ARGV[10] first status poll delay in ms   ARGV[11] the record's slot tag (its entry in the directory)
-- Returns 1 stored, 2 stored anew, 3 already stored by this owner (a retry), 0 not this owner's to store,
-- -1 fenced: an operator released the record from this owner, nothing written.
-- The call, by name (StoreScripts in Java; ScriptContractTest holds the two together):
-- keys: record, processes, in_flight, uncertain, released_owners, [directory, link]
-- argv: owner, response, status, ttl_ms, process_id, wake_up_channel, wake_up_message, wake_up_sharded, identity,
-- argv: first_poll_ms, slot_tag
-- include: wake_up.lua
-- include: now.lua
-- include: record_anew.lua
-- include: process_queue.lua
local now = now_ms()
local current = redis.call('HMGET', KEYS[1], 'state', 'owner', 'waiters', 'fingerprint', 'status')
local fingerprint = string.match(ARGV[9], '^([^\n]*)\n')
local result = 1
if current[1] == 'COMPLETED' and current[2] == ARGV[1] and current[4] == fingerprint and current[5] == ARGV[3] then
  -- Same owner, same request, same status: compared by meaning, not by the stored bytes, which need not be
  -- byte-identical once encrypted. Rewriting the owner changes nothing but is a write, so a WAIT behind this call
  -- (replica-acks) waits for the first attempt's write too.
  redis.call('HSET', KEYS[1], 'owner', ARGV[1])
  return 3
end
-- The owner's own unsettled record (the usual case) cannot name a released owner: every release deletes the record
-- it frees, and neither a reserve nor a complete writes one for an owner that was released. Anything else asks.
if (current[1] ~= 'IN_FLIGHT' and current[1] ~= 'UNCERTAIN') or current[2] ~= ARGV[1] then
  local released = redis.call('HGET', KEYS[5], ARGV[1])
  if released then
    return released == 'operator' and -1 or 0
  end
  if current[1] then
    return 0
  end
  write_anew(KEYS[1], ARGV[9], now)
  result = 2
end
redis.call('HSET', KEYS[1], 'state', 'COMPLETED', 'response', ARGV[2], 'status', ARGV[3], 'completed_at', now,
  'owner', ARGV[1])
redis.call('HDEL', KEYS[1], 'waiters', 'lease_until', 'lookup')
-- A record is in the index of its state only (the scripts move it between the two in one step); one written anew may
-- have left a stale entry in either, and a first write leaves one an expired UNCERTAIN record had (counts drop it).
if current[1] ~= 'UNCERTAIN' then
  redis.call('ZREM', KEYS[3], ARGV[7])
end
if current[1] ~= 'IN_FLIGHT' then
  redis.call('ZREM', KEYS[4], ARGV[7])
end
if ARGV[5] ~= '' then
  queue_process(KEYS[1], KEYS[2], KEYS[6], KEYS[7], ARGV[5], ARGV[10], ARGV[7], ARGV[11], ARGV[4], now)
end
redis.call('PEXPIRE', KEYS[1], ARGV[4])
wake_up(current[3], ARGV[6], ARGV[7], ARGV[8])
return result
