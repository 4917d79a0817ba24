import type { Keys } from "../../redis/keys.ts";
import type { RedisReply, ScriptCall } from "../../redis/port.ts";
import { spendSyncReadScriptCall } from "./scripts.generated.ts";

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

/** The first half of a spend sync, in one bucket (lua/spend-sync-read-2.lua). */
export function spendSyncReadCall(keys: Keys, input: SpendSyncReadInput): ScriptCall {
  const { bucket } = input;
  return spendSyncReadScriptCall(
    { spent: keys.spent(bucket), workers: keys.workers(bucket) },
    { sessions: input.sessions.flatMap((s) => [s.sessionId, s.withLists ? "1" : ""]) },
  );
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
