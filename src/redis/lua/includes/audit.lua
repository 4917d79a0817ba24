--[[
  The audit trail (src/audit/): one stream of operator actions and fleet events in {global}.

  audit_append(audit_key, cap, now, kind, kind_type, subject, via, target, detail): XADD of one
  entry (target and detail are tables, or JSON of them), capped by MAXLEN ~ cap (Redis drops whole stream nodes,
  so a little more than `cap` may stay). Every entry is cut to size first (audit_fit_*): text a
  worker or operator chose is cut, a long namespace list is summarised, and an entry still over
  AUDIT_ENTRY_MAX_BYTES is not appended (an error). Recording never fails the write it records:
  the XADD runs under redis.pcall and its error, if any, comes back as a table with `err`, for a
  caller that wants to report it.

  audit_worker_target(rec): the target of a worker event, from its record: sessionId, clientId,
  namespaces, the hostname when it has one and the env of each namespace in hostname-aware mode
  (an env other than "*", single mode's), as src/audit/worker-target.ts builds it.
]]

-- The entry's bytes (field names and values as stored); src/audit/entry.ts states the same.
local AUDIT_ENTRY_MAX_BYTES = 2048
-- Text shown but never judged: subject, clientId, id; then the advertise URL, Pinboard's own ids.
local AUDIT_TEXT_MAX, AUDIT_URL_MAX, AUDIT_SESSION_MAX = 128, 256, 64
-- Names scope is judged on (namespace, hostname, env), as JSON: a longer one is left out, never
-- cut, so that a cut name can never match another credential's.
local AUDIT_NAME_MAX = 256
-- The namespaces (and their envs) listed, as JSON; the rest are counted in namespacesOmitted.
local AUDIT_NAMES_MAX = 640
-- Set when fitting changed a value: JSON that needed no change is stored as the caller wrote it.
local audit_changed = false

-- The bytes `s` takes in an entry's JSON (escapes included: "/" is "\/", a control byte six).
local function audit_json_bytes(s)
  return #cjson.encode(s) - 2
end

-- The first `n` bytes of `s`, fewer when byte n + 1 continues a UTF-8 character.
local function audit_prefix(s, n)
  if n >= #s then return s end
  while n > 0 do
    local b = string.byte(s, n + 1)
    if b < 128 or b >= 192 then break end
    n = n - 1
  end
  return string.sub(s, 1, n)
end

-- `s` in at most `max` JSON bytes, cut on a UTF-8 character boundary and ended by "…" (three
-- bytes): the longest prefix that fits, found by bisection.
local function audit_cut(s, max)
  if type(s) ~= 'string' or audit_json_bytes(s) <= max then return s end
  audit_changed = true
  local lo, hi = 0, math.min(max - 3, #s)
  while lo < hi do
    local mid = math.ceil((lo + hi) / 2)
    if audit_json_bytes(audit_prefix(s, mid)) + 3 <= max then lo = mid else hi = mid - 1 end
  end
  return audit_prefix(s, lo) .. '\226\128\166'
end

local function audit_name(s)
  if type(s) == 'string' and s ~= '' and audit_json_bytes(s) <= AUDIT_NAME_MAX then return s end
  if s ~= nil then audit_changed = true end
  return nil
end

-- The namespaces listed while their JSON (and their envs') stays within AUDIT_NAMES_MAX.
local function audit_fit_namespaces(t, out)
  local envs = type(t.envs) == 'table' and t.envs or {}
  local kept, kept_envs, used, any_env = {}, {}, 0, false
  for i, ns in ipairs(t.namespaces) do
    local name, env = audit_name(ns), audit_name(envs[ns])
    local cost = name and audit_json_bytes(name) + 3 or AUDIT_NAMES_MAX + 1
    if env then cost = cost * 2 + audit_json_bytes(env) + 3 end
    if used + cost > AUDIT_NAMES_MAX then
      audit_changed = true
      out.namespacesOmitted = #t.namespaces - i + 1
      break
    end
    used = used + cost
    kept[#kept + 1] = name
    if env then kept_envs[name], any_env = env, true end
  end
  if #kept > 0 then out.namespaces = kept end
  if any_env then out.envs = kept_envs end
end

local function audit_fit_target(t)
  local out = {
    namespace = audit_name(t.namespace),
    env = audit_name(t.env),
    hostname = audit_name(t.hostname),
    id = audit_cut(t.id, AUDIT_TEXT_MAX * 2),
    clientId = audit_cut(t.clientId, AUDIT_TEXT_MAX),
    sessionId = audit_cut(t.sessionId, AUDIT_SESSION_MAX),
  }
  if type(t.namespaces) == 'table' then audit_fit_namespaces(t, out) end
  return out
end

local function audit_fit_detail(d)
  local out = {}
  for k, v in pairs(d) do out[k] = audit_cut(v, AUDIT_TEXT_MAX) end
  out.advertiseUrl = audit_cut(d.advertiseUrl, AUDIT_URL_MAX)
  out.replaced = audit_cut(d.replaced, AUDIT_SESSION_MAX)
  return out
end

-- `value` (a table, or JSON of one) fitted by `fit`, as JSON.
local function audit_fitted(value, fit)
  local json = type(value) == 'string' and value or nil
  audit_changed = json == nil
  local out = fit(json and cjson.decode(value) or value)
  if audit_changed then return cjson.encode(out) end
  return json
end

local function audit_append(audit_key, cap, now, kind, kind_type, subject, via, target, detail)
  local fields = {
    'at', string.format('%.0f', now), 'kind', kind, 'type', kind_type,
    'subject', audit_cut(subject, AUDIT_TEXT_MAX), 'via', via,
    'target', audit_fitted(target, audit_fit_target), 'detail', audit_fitted(detail, audit_fit_detail),
  }
  local bytes = 0
  for i = 1, #fields do bytes = bytes + #fields[i] end
  if bytes > AUDIT_ENTRY_MAX_BYTES then return { err = 'audit entry too large: ' .. bytes .. ' bytes' } end
  return redis.pcall('XADD', audit_key, 'MAXLEN', '~', cap, '*', unpack(fields))
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
  return t
end
