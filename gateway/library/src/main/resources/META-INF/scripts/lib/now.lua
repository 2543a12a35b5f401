-- Redis's own clock in epoch milliseconds: gateway instances' clocks may disagree, Redis's is one.
local function now_ms()
  local t = redis.call('TIME')
  return tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
end
