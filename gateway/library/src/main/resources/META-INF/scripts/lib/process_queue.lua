-- A record's unfinished process queued for the fleet's status polls in the pending processes of the record's slot,
-- where any gateway instance finds it. Given the directory and the link (on one Redis: on a Cluster they live in other
-- slots and the caller writes them in calls of their own), the process is also linked to the record for as long as
-- the record lives, and the slot brought forward in the directory (as idempotency_process_slots.lua's 'sooner': only
-- ever forward).
local function queue_process(record, queue, directory, link, process_id, poll_delay, scope_hash, slot_tag, ttl, now)
  redis.call('HSET', record, 'process_id', process_id, 'process_state', 'PENDING', 'process_poll_delay', poll_delay)
  local due = now + tonumber(poll_delay)
  redis.call('ZADD', queue, due, scope_hash)
  if link then
    local listed = redis.call('ZSCORE', directory, slot_tag)
    if not listed or tonumber(listed) > due then
      redis.call('ZADD', directory, due, slot_tag)
    end
    redis.call('SET', link, scope_hash, 'PX', ttl)
  end
end
