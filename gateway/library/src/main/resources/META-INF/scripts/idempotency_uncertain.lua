-- The request was sent but no complete answer came back: record that the outcome is unknown, keep the key
-- bound, and wake up waiters so they stop waiting for a result that will not come.
-- KEYS[1] record hash   KEYS[2] IN_FLIGHT index   KEYS[3] UNCERTAIN index of the record's slot
-- KEYS[4] the records of the slot to look up at their upstream: a record its reservation gave lookup values enters
-- it, due its lookup delay from now   KEYS[5] the owners released from the scope (hash: owner token -> how)
-- ARGV[1] owner token   ARGV[2] reason   ARGV[3] ttl in ms   ARGV[4] wake-up channel   ARGV[5] scope hash
-- ARGV[6] '1' to SPUBLISH the wake-up
-- ARGV[7] for a record written anew, '\n'-separated: fingerprint, operation (the 'route' field), tenant, upstream,
-- strict fingerprint, fingerprint rules, route id (format 2, as idempotency_complete.lua writes one)
-- ARGV[8] its encoded lookup values, '' when the route does not reconcile   ARGV[9] its lookup delay in ms
-- A record that vanished while its request was out (Redis restarted without persistence, a failover to a replica
-- that had not seen it) is written anew UNCERTAIN, as a late complete writes it COMPLETED: without it the retry
-- would be forwarded as if the request had never been sent. Not for an owner released from the scope: a release
-- deletes the record on purpose.
-- The owner's own record that turned UNCERTAIN because its lease lapsed (a reserve found it unrenewed while the owner
-- still waited for the upstream) is marked too: the owner knows the true reason, the lapse only guessed one. Its
-- uncertain_at stays, it has been uncertain since then.
-- Returns 1 marked, 3 marked and queued for a lookup, 2 already marked by this owner for this reason (a retry whose
-- first attempt landed), 4 written anew, 5 written anew and queued for a lookup, 0 not this owner's to mark.
-- The call, by name (StoreScripts in Java; ScriptContractTest holds the two together):
-- keys: record, in_flight, uncertain, lookups, released_owners
-- argv: owner, reason, ttl_ms, wake_up_channel, wake_up_message, wake_up_sharded, identity, [lookup_values],
-- argv: [lookup_delay_ms]
-- include: wake_up.lua
-- include: now.lua
-- include: record_anew.lua
local now = now_ms()
local current = redis.call('HMGET', KEYS[1], 'state', 'owner', 'waiters', 'uncertain_reason', 'lease_until',
  'lookup_after')
if current[1] == 'UNCERTAIN' and current[2] == ARGV[1] and current[5] then
  -- A lapse keeps lease_until, a mark removes it: this is the owner's first word on its lapsed record.
  redis.call('HSET', KEYS[1], 'uncertain_reason', ARGV[2])
  redis.call('HDEL', KEYS[1], 'lease_until')
  return 1
end
-- The reason tells a retry of the owner's own mark from another mark.
if current[1] == 'UNCERTAIN' and current[2] == ARGV[1] and current[4] == ARGV[2] then
  return 2
end
if not current[1] then
  if redis.call('HEXISTS', KEYS[5], ARGV[1]) == 1 then
    return 0
  end
  write_anew(KEYS[1], ARGV[7], now)
  redis.call('HSET', KEYS[1], 'state', 'UNCERTAIN', 'owner', ARGV[1], 'uncertain_at', now, 'uncertain_reason', ARGV[2])
  redis.call('PEXPIRE', KEYS[1], ARGV[3])
  redis.call('ZREM', KEYS[2], ARGV[5])
  redis.call('ZADD', KEYS[3], now, ARGV[5])
  if ARGV[8] ~= '' then
    redis.call('HSET', KEYS[1], 'lookup', ARGV[8], 'lookup_after', ARGV[9])
    redis.call('ZADD', KEYS[4], now + tonumber(ARGV[9]), ARGV[5])
    return 5
  end
  return 4
end
if current[1] ~= 'IN_FLIGHT' or current[2] ~= ARGV[1] then
  return 0
end
redis.call('HSET', KEYS[1], 'state', 'UNCERTAIN', 'uncertain_at', now, 'uncertain_reason', ARGV[2])
redis.call('HDEL', KEYS[1], 'lease_until', 'waiters')
redis.call('PEXPIRE', KEYS[1], ARGV[3])
redis.call('ZREM', KEYS[2], ARGV[5])
redis.call('ZADD', KEYS[3], now, ARGV[5])
wake_up(current[3], ARGV[4], ARGV[5], ARGV[6])
if current[6] then
  redis.call('ZADD', KEYS[4], now + tonumber(current[6]), ARGV[5])
  return 3
end
return 1
