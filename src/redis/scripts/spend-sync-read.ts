import { defineScript } from "../../contract/lua-script.ts";
import type { Keys } from "../keys.ts";
import type { RedisReply, ScriptCall } from "../port.ts";

/**
 * spend-sync-read: the first half of a spend sync (src/placement/spend-sync.ts), in one bucket.
 * Writes nothing. For each session of the batch: its spent count here (keys.ts `spent`, raw
 * `headroomRev \n count`, "" when none) and, when asked (in one bucket the session just placed
 * in, so its mirror is there), the namespace lists it belongs to, from its mirror: hostname and
 * namespaces.
 *
 * KEYS[1] spent     hash sessionId → headroomRev \n new placements in the bucket since
 * KEYS[2] workers   hash sessionId → record JSON (the bucket's mirror)
 * ARGV[1], ARGV[2], … pairs: sessionId, "1" to ask for its lists (else "")
 *
 * Returns one array per pair: {spent or ""} or, when asked and mirrored, {spent, hostname, ns…}.
 */
const LUA = `
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
`;

export const spendSyncReadScript = defineScript("spend-sync-read", LUA, "98a3866e0c399071ef2ee4cfd4abae63a09e6323");

export interface SpendSyncReadInput {
  bucket: number;
  /** withLists: ask for the session's namespace lists (from its mirror here). */
  sessions: ReadonlyArray<{ sessionId: string; withLists: boolean }>;
}

/** One session's answer; undefined and [] where the reply has nothing. */
export interface SpendSyncReadRow {
  /** The raw spent count here, `headroomRev \n count` ("" when none). */
  spent: string | undefined;
  hostname: string | undefined;
  namespaces: string[];
}

export function spendSyncReadCall(keys: Keys, input: SpendSyncReadInput): ScriptCall {
  const { bucket } = input;
  return {
    script: spendSyncReadScript,
    keys: [keys.spent(bucket), keys.workers(bucket)],
    args: input.sessions.flatMap((s) => [s.sessionId, s.withLists ? "1" : ""]),
  };
}

/** The rows in session order (a malformed one reads as empty). */
export function parseSpendSyncRead(reply: RedisReply): SpendSyncReadRow[] {
  if (!Array.isArray(reply)) return [];
  return reply.map((entry) => {
    const [spent, hostname, ...namespaces] = Array.isArray(entry)
      ? entry.map((x) => (x === null ? "" : String(x)))
      : [];
    return { spent, hostname, namespaces };
  });
}
