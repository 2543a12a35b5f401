-- A record that vanished (Redis lost it while its request was out) written anew with its identity, '\n'-separated:
-- fingerprint, operation (the 'route' field), tenant, upstream, strict fingerprint, fingerprint rules, route id; in
-- format 2, each optional field only where it says something, as idempotency_reserve.lua writes a new record. The
-- caller sets its state.
local function write_anew(record, identity, now)
  local fingerprint, route, tenant, upstream, strict, rules, route_id = string.match(identity,
    '^([^\n]*)\n([^\n]*)\n([^\n]*)\n([^\n]*)\n([^\n]*)\n([^\n]*)\n([^\n]*)$')
  redis.call('HSET', record, 'fingerprint', fingerprint, 'route', route, 'tenant', tenant, 'upstream', upstream,
    'reserved_at', now, 'attempts', 1, 'restored', 1, 'format', 2)
  if rules ~= 'c1' then
    redis.call('HSET', record, 'rules', rules)
  end
  if strict ~= fingerprint then
    redis.call('HSET', record, 'strict', strict)
  end
  if route_id ~= route then
    redis.call('HSET', record, 'route_id', route_id)
  end
end
