-- wrk script for the peer benchmark: JSON POSTs of an Onboarding-sized merchant, each with an Idempotency-Key.
--   wrk ... -s idempotency-keys.lua URL -- fresh          a new key on every request (first writes)
--   wrk ... -s idempotency-keys.lua URL -- replay RUN N   keys RUN-0..RUN-(N-1) over and over (replays, once the
--                                                         warm-up has sent each of them once)
--   a fourth argument BYTES pads the merchant with a "notes" field to about BYTES bytes (the cost curve)
local body = '{"legalName":"Panadería Sol","taxId":"SOL1234567","email":"pagos@sol.example",'
  .. '"address":{"street":"Av. Siempre Viva 742","city":"Bogotá","country":"CO"},'
  .. '"integrations":[{"type":"ERP","name":"sap"},{"type":"CRM","name":"hubspot"}],'
  .. '"paymentMethods":["CARD","PIX","PSE"],"sites":["https://sol.example","https://tienda.sol.example"],'
  .. '"settings":{"currency":"COP","notifications":{"email":true,"sms":false},"settlementDays":2}}'

local threads = 0
function setup(thread)
  threads = threads + 1
  thread:set("id", threads)
end

local mode, run, size, prefix
local counter = 0
function init(args)
  mode = args[1] or "fresh"
  run = args[2] or "run"
  size = tonumber(args[3] or "1000")
  math.randomseed(os.time() * 1000 + (id or 0))
  prefix = string.format("key-%d-%d-%08x-", os.time(), id or 0, math.random(0, 0x7fffffff))
  local bytes = tonumber(args[4] or "0")
  if bytes > #body + 12 then
    body = body:sub(1, -2) .. ',"notes":"' .. string.rep("n", bytes - #body - 12) .. '"}'
  end
end

local headers = { ["Content-Type"] = "application/json" }
function request()
  counter = counter + 1
  if mode == "replay" then
    headers["Idempotency-Key"] = string.format("replay-%s-%06d", run, (counter * 7 + (id or 0)) % size)
  else
    headers["Idempotency-Key"] = prefix .. counter
  end
  return wrk.format("POST", nil, headers, body)
end
