--[[
  spend-sync-read: the first half of a spend sync (src/placement/spend-sync.ts), in one bucket.
  Writes nothing. For each session of the batch: its spent count here (keys.ts `spent`, raw
  `headroomRev \n count`, "" when none) and, when asked (in one bucket the session just placed
  in, so its mirror is there), the namespace lists it belongs to, from its mirror: hostname and
  namespaces.

  KEYS[1] spent        hash sessionId → headroomRev \n new placements in the bucket since
  KEYS[2] workers      hash sessionId → record JSON (the bucket's mirror)
  ARGV[1 …] sessions   pairs: sessionId, "1" to ask for its lists (else "")

  Returns one array per pair: {spent or ""} or, when asked and mirrored, {spent, hostname, ns…}.
]]

local out = {}
for i = 1, #ARGV - 1, 2 do
  local sid = ARGV[i]
  local entry = { redis.call('HGET', KEYS[1], sid) or '' }
  if ARGV[i + 1] == '1' then
    local w = redis.call('HGET', KEYS[2], sid)
    if w then
      local rec = cjson.decode(w)
      entry[2] = type(rec.hostname) == 'string' and rec.hostname or ''
      if type(rec.namespaces) == 'table' then
        for _, ns in ipairs(rec.namespaces) do entry[#entry + 1] = ns end
      end
    end
  end
  out[#out + 1] = entry
end
return out
