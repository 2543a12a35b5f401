-- Wakes up a scope's waiters on every gateway instance, only when the record says some wait: SPUBLISH where the
-- channel is sharded (a Redis 7 Cluster: the channel is in the record's slot), PUBLISH elsewhere.
local function wake_up(waiters, channel, scope_hash, sharded)
  if waiters then
    redis.call(sharded == '1' and 'SPUBLISH' or 'PUBLISH', channel, scope_hash)
  end
end
