-- The directory of the slots that hold pending processes: slot tag by the time to look next. One key for the
-- fleet, touched around each stored 202 naming a process and once per slot looked into, never per request.
-- KEYS[1] the directory
-- ARGV[1] operation:
--   'claim' ARGV[2] most slots   ARGV[3] lease in ms: the slots due now, each pushed back by the lease; returns
--           {now, tag, claimed score, tag, claimed score...}
--   'sooner' ARGV[2] tag   ARGV[3] delay in ms: look at the slot within the delay (only ever brings it forward)
--   'next' ARGV[2] tag   ARGV[3] the claimed score   ARGV[4] time to look next (absolute ms), '' when the slot
--           was empty (the slot leaves the directory): done only if nobody changed the slot's entry since the claim
--           (a 'sooner' in between wins)
--   'restore' ARGV[2], ARGV[3]... pairs of tag and time (absolute ms) of a slot's earliest pending poll: each slot
--           the directory lacks is added at its time, one it has later is brought forward; returns how many it
--           lacked (lost with a write to the directory: refused while its master was down, or not yet replicated
--           when it failed over)
-- The call, by name (StoreScripts in Java; ScriptContractTest holds the two together):
-- keys: directory
-- argv claim: most_slots, lease_ms
-- reply claim: now, tag_and_score...
-- argv sooner: tag, delay_ms
-- argv next: tag, claimed_score, next_look
-- argv restore: tag_and_time...
-- include: now.lua
local now = now_ms()
local op = ARGV[1]
if op == 'claim' then
  local due = redis.call('ZRANGEBYSCORE', KEYS[1], '-inf', now, 'LIMIT', 0, tonumber(ARGV[2]))
  local reply = {tostring(now)}
  local claimed = now + tonumber(ARGV[3])
  for _, tag in ipairs(due) do
    redis.call('ZADD', KEYS[1], claimed, tag)
    reply[#reply + 1] = tag
    reply[#reply + 1] = tostring(claimed)
  end
  return reply
elseif op == 'sooner' then
  local at = now + tonumber(ARGV[3])
  local current = redis.call('ZSCORE', KEYS[1], ARGV[2])
  if not current or tonumber(current) > at then
    redis.call('ZADD', KEYS[1], at, ARGV[2])
  end
  return 1
elseif op == 'next' then
  local current = redis.call('ZSCORE', KEYS[1], ARGV[2])
  if current and tonumber(current) == tonumber(ARGV[3]) then
    if ARGV[4] == '' then
      redis.call('ZREM', KEYS[1], ARGV[2])
    else
      redis.call('ZADD', KEYS[1], ARGV[4], ARGV[2])
    end
    return 1
  end
  return 0
elseif op == 'restore' then
  local lacked = 0
  for i = 2, #ARGV - 1, 2 do
    local current = redis.call('ZSCORE', KEYS[1], ARGV[i])
    if not current then
      lacked = lacked + 1
    end
    if not current or tonumber(current) > tonumber(ARGV[i + 1]) then
      redis.call('ZADD', KEYS[1], ARGV[i + 1], ARGV[i])
    end
  end
  return {lacked}
end
return redis.error_reply('unknown operation ' .. tostring(op))
