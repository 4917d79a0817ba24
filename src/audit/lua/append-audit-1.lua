--[[
  append-audit: appends one entry to the audit trail, stamped with Redis' clock. The stream is
  capped by MAXLEN ~ cap on every append; the entry is cut to size first (includes/audit.lua).

  KEYS[1] audit      stream of audit entries
  ARGV[1] cap        the cap (PINBOARD_AUDIT_MAX_ENTRIES)
  ARGV[2] kind       "action" | "event"
  ARGV[3] type       the entry's type: wind_down, drain, worker.registered, …
  ARGV[4] subject    the credential's sub; "" for none (events)
  ARGV[5] via        api | console | cli | registry | sweeper | data-plane
  ARGV[6] target     target JSON
  ARGV[7] detail     detail JSON

  Returns the entry's id, or an error reply when the XADD failed (the key holds another type) or
  the entry is too large even cut to size, for the caller to log.
]]
--- @include "now"
--- @include "audit"

local id = audit_append(KEYS[1], ARGV[1], now_ms(), ARGV[2], ARGV[3], ARGV[4], ARGV[5], ARGV[6], ARGV[7])
if type(id) == 'table' and id.err then return redis.error_reply(id.err) end
return id
