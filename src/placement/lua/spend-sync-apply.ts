import type { Keys } from "../../redis/keys.ts";
import type { RedisReply, ScriptCall } from "../../redis/port.ts";
import { spendSyncApplyScriptCall } from "./scripts.generated.ts";

export interface SpendSyncApplyInput {
  bucket: number;
  /** The namespace lists the sessions name (by index into this). */
  lists: ReadonlyArray<{ hostname: string; ns: string }>;
  sessions: ReadonlyArray<{
    sessionId: string;
    /** The headroom revision read. */
    rev: number;
    /** Placements counted under `rev` by every other bucket. */
    elsewhere: number;
    /** Indexes into `lists`. */
    lists: readonly number[];
  }>;
}

export interface SpendSyncApplyResult {
  lowered: number;
  /** Sessions whose mirror here is behind the revision read. */
  behind: string[];
}

/** The second half of a spend sync, in one bucket (lua/spend-sync-apply-2.lua). */
export function spendSyncApplyCall(keys: Keys, input: SpendSyncApplyInput): ScriptCall {
  const { bucket } = input;
  return spendSyncApplyScriptCall(
    {
      workers: keys.workers(bucket),
      spent: keys.spent(bucket),
      nsLists: input.lists.flatMap(({ hostname, ns }) => keys.nsListKeys(bucket, hostname, ns)),
    },
    {
      // KEYS index of list i's first key: 3 + 3i (Lua is 1-based).
      sessions: input.sessions.flatMap((s) => [
        s.sessionId,
        s.rev,
        s.elsewhere,
        s.lists.length,
        ...s.lists.map((i) => 3 + 3 * i),
      ]),
    },
  );
}

export function parseSpendSyncApply(reply: RedisReply): SpendSyncApplyResult {
  const [lowered, behind] = Array.isArray(reply) ? reply : [];
  return { lowered: Number(lowered ?? 0), behind: Array.isArray(behind) ? behind.map(String) : [] };
}
