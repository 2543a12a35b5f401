-- One slot's share of a count of unsettled records (idempotency_unsettled.lua, idempotency_unsettled_by_master.lua),
-- added into totals {IN_FLIGHT, UNCERTAIN, IN_FLIGHT reserved before now - pending after, pending processes, ages in
-- ms of the oldest IN_FLIGHT, oldest UNCERTAIN and oldest pending process}. Members whose record is gone (its TTL
-- ended) or is no longer in the index's state are dropped on the way, so a count costs O(unsettled records) and
-- stays true. The ages cost one ZRANGE per index; the pending processes' one HGET per process (the queue is by poll
-- time, and a process is pending since its record was completed: members whose record is gone are left to the poll
-- that finds it gone). record_prefix: 'idempotency:{'.
local function count_slot(totals, in_flight, uncertain, processes, record_prefix, pending_after, now)
  -- Most slots hold nothing unsettled: one call tells (the three keys share the slot).
  if redis.call('EXISTS', in_flight, uncertain, processes) == 0 then
    return
  end
  for _, index in ipairs({{in_flight, 'IN_FLIGHT'}, {uncertain, 'UNCERTAIN'}}) do
    for _, scope in ipairs(redis.call('ZRANGE', index[1], 0, -1)) do
      if redis.call('HGET', record_prefix .. scope .. '}', 'state') ~= index[2] then
        redis.call('ZREM', index[1], scope)
      end
    end
  end
  totals[1] = totals[1] + redis.call('ZCARD', in_flight)
  totals[2] = totals[2] + redis.call('ZCARD', uncertain)
  totals[3] = totals[3] + redis.call('ZCOUNT', in_flight, '-inf', now - pending_after)
  totals[4] = totals[4] + redis.call('ZCARD', processes)
  for i, index in ipairs({in_flight, uncertain}) do
    local first = redis.call('ZRANGE', index, 0, 0, 'WITHSCORES')
    if #first > 0 then
      totals[4 + i] = math.max(totals[4 + i], now - tonumber(first[2]))
    end
  end
  for _, scope in ipairs(redis.call('ZRANGE', processes, 0, -1)) do
    local completed_at = tonumber(redis.call('HGET', record_prefix .. scope .. '}', 'completed_at'))
    if completed_at then
      totals[7] = math.max(totals[7], now - completed_at)
    end
  end
end
