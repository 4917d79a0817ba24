--[[
  resurrection: detects that Redis lost everything and tracks the paging-in of durable
  instances. The first sweep on a Redis sets the incarnation key; finding it absent means the
  data is gone (a restart without persistence, a flush), so a resurrection starts at cursor 0.

  KEYS[1] incarnation       string
  KEYS[2] resurrectCursor   string: HSCAN cursor of the durable index, absent when idle
  ARGV[1] step              "begin" (returns the cursor to continue from, or "" when idle)
                            or "advance" with ARGV[2] the next cursor ("0" ends the resurrection)
  ARGV[2] cursor            next cursor (advance)
  ARGV[3] incarnationId     incarnation id (begin)

  Returns the cursor to continue from, or "".
]]

if ARGV[1] == 'begin' then
  if redis.call('SET', KEYS[1], ARGV[3], 'NX') then redis.call('SET', KEYS[2], '0') end
  return redis.call('GET', KEYS[2]) or ''
end
if ARGV[2] == '0' then
  redis.call('DEL', KEYS[2])
  return ''
end
redis.call('SET', KEYS[2], ARGV[2])
return ARGV[2]
