-- Free a reservation, only for its owner, and wake up waiters so that one of them can take it.
-- The record is gone afterwards, so the release leaves a short-lived note of who released it: a retried call whose
-- first attempt did land (its answer was late) recognises its own release, even if another request has taken the
-- key since, instead of being taken for a stranger.
-- KEYS[1] record hash   KEYS[2] release note (same hash tag: one slot in a Redis Cluster)
-- KEYS[3] IN_FLIGHT index   KEYS[4] UNCERTAIN index of the record's slot
-- ARGV[1] owner token   ARGV[2] wake-up channel   ARGV[3] scope hash (the wake-up message)
-- ARGV[4] '1' to SPUBLISH the wake-up   ARGV[5] how long the release note lives, in ms
-- Returns 1 released, 2 already released by this owner (a retry), 0 not this owner's to release.
local current = redis.call('HMGET', KEYS[1], 'state', 'owner', 'waiters')
if (current[1] ~= 'IN_FLIGHT' and current[1] ~= 'UNCERTAIN') or current[2] ~= ARGV[1] then
  if redis.call('GET', KEYS[2]) == ARGV[1] then
    return 2
  end
  return 0
end
redis.call('DEL', KEYS[1])
redis.call('ZREM', KEYS[3], ARGV[3])
redis.call('ZREM', KEYS[4], ARGV[3])
redis.call('SET', KEYS[2], ARGV[1], 'PX', ARGV[5])
if current[3] then
  redis.call(ARGV[4] == '1' and 'SPUBLISH' or 'PUBLISH', ARGV[2], ARGV[3])
end
return 1
