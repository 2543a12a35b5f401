-- The memory marker of one master: a key with no TTL that only a loss of the master's memory removes (a restart
-- without persistence, a failover to an empty replica, FLUSHALL). Written if absent, in one step, so that instances
-- arming it at once agree on one epoch.
-- KEYS[1] marker key
-- ARGV[1] a new random epoch, written if the marker is absent
-- Returns the marker's epoch: ARGV[1] when this call wrote it.
-- The call, by name (StoreScripts in Java; ScriptContractTest holds the two together):
-- keys: marker
-- argv: epoch
local current = redis.call('GET', KEYS[1])
if current then
  return current
end
redis.call('SET', KEYS[1], ARGV[1])
return ARGV[1]
