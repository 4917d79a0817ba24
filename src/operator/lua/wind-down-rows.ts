import type { Keys } from "../../redis/keys.ts";
import type { RedisReply, ScriptCall } from "../../redis/port.ts";
import { windDownRowsScriptCall } from "./scripts.generated.ts";

/** The placements hash of one (env, ns) in one bucket. */
export interface WindDownRowsInput {
  bucket: number;
  env: string;
  ns: string;
}

/** A row as judged: its id, its owner's sessionId and the hostname it carries. */
export interface WindDownRow {
  id: string;
  sessionId: string;
  hostname: string;
}

export interface WindDownRowsStampInput extends WindDownRowsInput {
  /** The deadline (ms), or "" to clear the wind-down. */
  stamp: string;
  rows: readonly WindDownRow[];
}

export type WindDownOutcome = "notify" | "stamped" | "changed";

function rowsKeys(keys: Keys, { bucket, env, ns }: WindDownRowsInput) {
  return { placements: keys.placements(bucket, env, ns), workers: keys.workers(bucket) };
}

/** The "read" form of lua/wind-down-rows-2.lua: every row of the hash, stamping nothing. */
export function windDownRowsReadCall(keys: Keys, input: WindDownRowsInput): ScriptCall {
  return windDownRowsScriptCall(rowsKeys(keys, input), { stamp: "read", rows: [] });
}

export function parseWindDownRowsRead(reply: RedisReply): WindDownRow[] {
  const flat = (reply ?? []) as string[];
  const rows: WindDownRow[] = [];
  for (let i = 0; i + 2 < flat.length; i += 3)
    rows.push({ id: flat[i]!, sessionId: flat[i + 1]!, hostname: flat[i + 2]! });
  return rows;
}

/** Stamps the rows, each a compare-and-set on the owner and hostname it was judged by. */
export function windDownRowsStampCall(keys: Keys, input: WindDownRowsStampInput): ScriptCall {
  const rows = input.rows.flatMap((row) => [row.id, row.sessionId, row.hostname]);
  return windDownRowsScriptCall(rowsKeys(keys, input), { stamp: input.stamp, rows });
}

/** The outcome of every id that was not simply gone, in reply order. */
export function parseWindDownRowsStamp(reply: RedisReply): Array<[id: string, outcome: WindDownOutcome]> {
  const flat = reply as string[];
  const out: Array<[string, WindDownOutcome]> = [];
  for (let i = 0; i + 1 < flat.length; i += 2) out.push([flat[i]!, flat[i + 1]! as WindDownOutcome]);
  return out;
}
