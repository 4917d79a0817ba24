--[[
  read-spent: one bucket's spent counts (keys.ts `spent`), for the reads that subtract them from
  the records' headroom. Writes nothing. A script rather than HGETALL so that the reads of every
  bucket go out as one pipeline (one subrequest on Upstash, one round trip per cluster node).

  KEYS[1] spent   hash sessionId → headroomRev \n new placements in the bucket since

  Returns {sessionId, headroomRev \n count, …}.
]]

return redis.call('HGETALL', KEYS[1])
