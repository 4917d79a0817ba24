--[[
  The audit trail (src/audit/): one stream of operator actions and fleet events in {global}.

  audit_append(audit_key, cap, now, kind, kind_type, subject, via, target, detail): XADD of one
  entry, capped by MAXLEN ~ cap (Redis drops whole stream nodes, so a little more than `cap`
  may stay). Recording never fails the write it records: the XADD runs under redis.pcall and its
  error, if any, comes back as a table with `err`, for a caller that wants to report it.

  audit_worker_target(rec): the target JSON of a worker event, from its record: sessionId,
  clientId, namespaces, the hostname when it has one and the env of each namespace in
  hostname-aware mode (an env other than "*", single mode's), as src/audit/worker-target.ts builds it.
]]

local function audit_append(audit_key, cap, now, kind, kind_type, subject, via, target, detail)
  return redis.pcall('XADD', audit_key, 'MAXLEN', '~', cap, '*',
    'at', string.format('%.0f', now), 'kind', kind, 'type', kind_type, 'subject', subject, 'via', via,
    'target', target, 'detail', detail)
end

local function audit_worker_target(rec)
  local t = { sessionId = rec.sessionId, clientId = rec.clientId, namespaces = rec.namespaces }
  if type(rec.hostname) == 'string' and rec.hostname ~= '' then t.hostname = rec.hostname end
  local envs, any = {}, false
  for _, ns in ipairs(rec.namespaces) do
    local e = type(rec.envs) == 'table' and rec.envs[ns] or nil
    if type(e) ~= 'string' then e = rec.env end
    if type(e) == 'string' and e ~= '*' then
      envs[ns] = e
      any = true
    end
  end
  if any then t.envs = envs end
  return cjson.encode(t)
end
