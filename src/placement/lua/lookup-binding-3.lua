--[[
  lookup-binding: the hostname-aware binding lookup that runs before resolve, in one round trip:
  the (hostname, ns) binding names the env, the env binding its takeover, and a displaced
  binding carries a quarantine.

  KEYS[1] hostnameBindings    hash {hostname}{ns} → env \n epoch
  KEYS[2] envBindings         hash env → takeover \n epoch
  KEYS[3] bindingQuarantine   hash {hostname}{ns} → until ms
  ARGV[1] binding             {hostname}{ns}

  Returns {env or "", takeover or "", quarantine until ms or ""}.
]]

local b = redis.call('HGET', KEYS[1], ARGV[1])
if not b then return {'', '', ''} end
local env = string.sub(b, 1, (string.find(b, '\n', 1, true) or (#b + 1)) - 1)
local t = redis.call('HGET', KEYS[2], env)
local takeover = t and string.sub(t, 1, (string.find(t, '\n', 1, true) or (#t + 1)) - 1) or ''
return {env, takeover, redis.call('HGET', KEYS[3], ARGV[1]) or ''}
