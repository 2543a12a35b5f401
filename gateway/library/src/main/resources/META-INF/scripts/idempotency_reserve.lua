-- Reserve a scope atomically, or report what holds it. One round trip for every outcome:
-- first write (reserved), replay (the stored response comes back), mismatch, in flight, uncertain.
-- KEYS[1] record hash   KEYS[2] IN_FLIGHT index of the record's slot   KEYS[3] UNCERTAIN index of the record's slot
-- (sorted sets of scope hashes by when they entered the state: counts and the operator's queue read them, never a
-- SCAN of every record)   KEYS[4] the owners released from the scope (hash: owner token -> how; see release.lua)
-- KEYS[5] the records of the slot to look up at their upstream (sorted set: scope hash by when the lookup is due)
-- ARGV[1] request fingerprint   ARGV[2] owner token    ARGV[3] lease in ms
-- ARGV[4] '1' when the caller will wait for an in-flight record
-- ARGV[5] operation (the name that scopes the record; the field is called 'route': it held the route id, which is
-- the operation by default, before routes could name one)   ARGV[6] tenant hash    ARGV[7] upstream URI
-- ARGV[8] record ttl in ms (how long an unsettled record may exist at all)
-- ARGV[9] '1' when the upstream dedupes on the forwarded key, so an UNCERTAIN record may be sent again
-- ARGV[10] wake-up channel      ARGV[11] scope hash (the wake-up message)   ARGV[12] '1' to SPUBLISH it
-- ARGV[13] request method       ARGV[14] request path (raw, no query): for operators reconciling the record
-- ARGV[15] encoded lookup values, '' when the route does not reconcile   ARGV[16] lookup delay in ms: a record with
-- lookup values that turns UNCERTAIN is looked up at its upstream this long after (reconcile_queue)
-- ARGV[17] strict fingerprint (the canonical form with no route rule)   ARGV[18] the route's fingerprint rules
-- ARGV[19] the id of the route that reserves (for operators)
-- A new record is written in format 2: 'format', and, only where they say something (every field costs a record
-- about 40 bytes, more once its hash outgrows a listpack), 'rules' unless the route has none ('c1'), 'strict' unless
-- it is the fingerprint, 'route_id' unless it is the operation. Format 1 (no 'format' field) has none of them: its
-- rules are unknown, and it is compared by its fingerprint only.
-- Same intent: the same fingerprint, or, for a record of other rules than the caller's, the same strict fingerprint
-- (Fingerprints.sameIntentAs in Java, which judges the reply again).
-- Replies for a taken record: {state, fingerprint, response ('' unless a replay), process state, 'LOOKUP' or '',
-- strict fingerprint, rules ('' for format 1)}.
-- Returns {state, fingerprint, '', '', 'LOOKUP'} when this call found the lease lapsed and queued the record's lookup
-- at its upstream (its reservation kept lookup values), or found that lookup long overdue. Returns {'FENCED'} for an
-- owner released from the scope (unless the record is a replay for it): this is its own reserve arriving after its
-- release (re-sent after a reconnect, or overtaken by the release on another connection), and it must not bind the key
-- to an owner nobody holds.
-- Time comes from the Redis server: gateway instances' clocks may disagree, Redis's is one.
-- One read of the record, its stored response included: a replay (most reserves of a key after its first) needs
-- nothing else, not even the clock. A replay writes nothing, so it is what even a released owner may be told: the
-- fence below keeps released owners from writing, and the key's result is the answer to any request of its payload.
-- The call, by name (StoreScripts in Java; ScriptContractTest holds the two together):
-- keys: record, in_flight, uncertain, released_owners, lookups
-- argv: fingerprint, owner, lease_ms, will_wait, operation, tenant_hash, upstream, record_ttl_ms, retake_uncertain,
-- argv: wake_up_channel, wake_up_message, wake_up_sharded, method, path, [lookup_values], [lookup_delay_ms],
-- argv: strict_fingerprint, rules, route_id
-- reply: state, fingerprint, response, process_state, lookup, strict, rules
-- include: wake_up.lua
-- include: now.lua
local current = redis.call('HMGET', KEYS[1], 'state', 'fingerprint', 'lease_until', 'waiters', 'owner',
  'lookup_after', 'response', 'process_state', 'strict', 'rules', 'format')
local state = current[1]
local strict = current[9] or current[2]
local rules = current[10] or (current[11] and 'c1') or ''
local same = state and (current[2] == ARGV[1] or (rules ~= '' and rules ~= ARGV[18] and strict == ARGV[17]))
local function taken(lookup)
  return {state, current[2], '', '', lookup, strict, rules}
end
if state == 'COMPLETED' and same then
  return {state, current[2], current[7], current[8] or '', '', strict, rules}
end
if redis.call('HEXISTS', KEYS[4], ARGV[2]) == 1 then
  return {'FENCED'}
end
local now = now_ms()
local queued = false
if not state then
  -- One HSET, whatever the record says: each call from a script costs about as much as the field it writes.
  local fields = {'state', 'IN_FLIGHT', 'fingerprint', ARGV[1], 'owner', ARGV[2],
    'reserved_at', now, 'lease_until', now + tonumber(ARGV[3]), 'attempts', 1,
    'route', ARGV[5], 'tenant', ARGV[6], 'upstream', ARGV[7], 'method', ARGV[13], 'path', ARGV[14], 'format', 2}
  local function also(name, value)
    fields[#fields + 1] = name
    fields[#fields + 1] = value
  end
  if ARGV[18] ~= 'c1' then
    also('rules', ARGV[18])
  end
  if ARGV[17] ~= ARGV[1] then
    also('strict', ARGV[17])
  end
  if ARGV[19] ~= ARGV[5] then
    also('route_id', ARGV[19])
  end
  if ARGV[15] and ARGV[15] ~= '' then
    also('lookup', ARGV[15])
    also('lookup_after', ARGV[16])
  end
  redis.call('HSET', KEYS[1], unpack(fields))
  -- The record outlives its lease: a lease that lapses makes it UNCERTAIN, never free.
  redis.call('PEXPIRE', KEYS[1], ARGV[8])
  redis.call('ZADD', KEYS[2], now, ARGV[11])
  -- No ZREM of an UNCERTAIN entry: one can be left only by an UNCERTAIN record whose TTL ended. Every reader of the
  -- index checks the record's own state (a count drops the entry, a list skips it), and the record, once it is
  -- UNCERTAIN itself, takes the entry over with its own time. One call fewer on every first write.
  return {'RESERVED'}
end
if not same then
  -- another intent: the stored response is never sent back for it
  return taken('')
end
if state == 'IN_FLIGHT' and current[5] == ARGV[2] then
  -- This request's own reservation: its reserve re-sent after a connection reset, the first attempt having landed.
  -- Still its own, not yet forwarded: reserved again with a fresh lease, and no waiter counted (it would wait on
  -- itself).
  redis.call('HSET', KEYS[1], 'lease_until', now + tonumber(ARGV[3]))
  return {'RESERVED'}
end
if state == 'IN_FLIGHT' and tonumber(current[3]) < now then
  -- Nobody renewed the lease: the gateway instance that held it is gone. What the upstream did is unknown.
  state = 'UNCERTAIN'
  redis.call('HSET', KEYS[1], 'state', state, 'uncertain_at', now,
    'uncertain_reason', 'lease lapsed: the gateway instance forwarding the request stopped renewing it')
  redis.call('PEXPIRE', KEYS[1], ARGV[8])
  redis.call('ZREM', KEYS[2], ARGV[11])
  redis.call('ZADD', KEYS[3], now, ARGV[11])
  if current[6] then
    redis.call('ZADD', KEYS[5], now + tonumber(current[6]), ARGV[11])
    queued = true
  end
  wake_up(current[4], ARGV[10], ARGV[11], ARGV[12])
end
if state == 'UNCERTAIN' and ARGV[9] == '1' then
  -- The upstream recognises the key itself: sending it again cannot act twice.
  redis.call('HSET', KEYS[1], 'state', 'IN_FLIGHT', 'owner', ARGV[2], 'reserved_at', now,
    'lease_until', now + tonumber(ARGV[3]))
  redis.call('HINCRBY', KEYS[1], 'attempts', 1)
  redis.call('PEXPIRE', KEYS[1], ARGV[8])
  redis.call('ZREM', KEYS[3], ARGV[11])
  redis.call('ZADD', KEYS[2], now, ARGV[11])
  return {'RESERVED'}
end
if state == 'IN_FLIGHT' and ARGV[4] == '1' then
  -- completing or releasing publishes a wake-up only when someone waits
  redis.call('HINCRBY', KEYS[1], 'waiters', 1)
end
if state == 'UNCERTAIN' and not queued and current[6] then
  -- A lookup overdue by half a minute has not been looked into: the directory lost its slot (a write to it lost with
  -- a Redis master, or the instance that made the record UNCERTAIN died before it wrote there). Said again.
  local due = redis.call('ZSCORE', KEYS[5], ARGV[11])
  queued = due ~= false and tonumber(due) < now - 30000
end
if queued then
  -- The lapse queued the record's lookup: the caller says where to look (a separate call, in a Cluster).
  return taken('LOOKUP')
end
return taken('')
