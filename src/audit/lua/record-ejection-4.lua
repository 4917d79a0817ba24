--[[
  record-ejection: records a worker's outlier ejection in the audit trail and remembers it until
  its end, the worker's re-admission, is recorded (by the sweeper's gc-fleet once the ejection has
  run out). When the worker's previous ejection ran out without that, its re-admission is recorded
  first, so the trail never shows two ejections in a row.

  KEYS[1] audit            stream of audit entries
  KEYS[2] auditEjections   hash sessionId → ejected-until ms (recorded, re-admission not yet)
  KEYS[3] sessions         hash sessionId → record JSON (the target: client, namespaces, …)
  KEYS[4] outliers         hash sessionId → consecutive \n ejections \n ejected-until ms
  ARGV[1] cap              the audit trail's cap
  ARGV[2] sessionId
  ARGV[3] ejectedUntil     the ejection's end, ms

  Returns 1 when recorded, 0 when the worker has no record any more (nothing is recorded), or an
  error reply when the XADD failed, for the caller to log.
]]
--- @include "now"
--- @include "audit"

local now = now_ms()
local sid = ARGV[2]
local raw = redis.call('HGET', KEYS[3], sid)
if not raw then
  redis.call('HDEL', KEYS[2], sid)
  return 0
end
local target = audit_worker_target(cjson.decode(raw))
local previous = tonumber(redis.call('HGET', KEYS[2], sid) or '')
if previous and previous <= now then
  audit_append(KEYS[1], ARGV[1], now, 'event', 'worker.readmitted', '', 'data-plane', target,
    { ejectedUntil = previous })
end
local ejections = 0
local outlier = redis.call('HGET', KEYS[4], sid)
if outlier then
  local a = string.find(outlier, '\n', 1, true)
  local b = a and string.find(outlier, '\n', a + 1, true)
  if b then ejections = tonumber(string.sub(outlier, a + 1, b - 1)) or 0 end
end
local id = audit_append(KEYS[1], ARGV[1], now, 'event', 'worker.ejected', '', 'data-plane', target,
  { ejectedUntil = tonumber(ARGV[3]), ejections = ejections })
redis.call('HSET', KEYS[2], sid, ARGV[3])
if type(id) == 'table' and id.err then return redis.error_reply(id.err) end
return 1
