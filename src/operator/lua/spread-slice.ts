import type { Keys } from "../../redis/keys.ts";
import type { RedisReply, ScriptCall } from "../../redis/port.ts";
import { spreadSliceScriptCall } from "./scripts.generated.ts";

/** One slice of one placements hash: where to go on from and how much to look at. */
export interface SpreadSliceInput {
  bucket: number;
  env: string;
  ns: string;
  cursor: string;
  /** Rows to look at in this call, about. */
  budget: number;
  /** HSCAN's COUNT for each page. */
  count: number;
}

/** Rows of one owner in a slice: a placed row's sessionId, or "" for a row that is not placed. */
export interface OwnerTally {
  sessionId: string;
  hostname: string;
  rows: number;
}

export interface SpreadSlice {
  /** The HSCAN cursor to go on from, "0" when the hash is done. */
  next: string;
  scanned: number;
  owners: OwnerTally[];
}

/** lua/spread-slice-1.lua for one slice, to send through runMany. */
export function spreadSliceCall(keys: Keys, input: SpreadSliceInput): ScriptCall {
  const { bucket, env, ns, cursor, budget, count } = input;
  return spreadSliceScriptCall({ placements: keys.placements(bucket, env, ns) }, { cursor, budget, count });
}

export function parseSpreadSlice(reply: RedisReply): SpreadSlice {
  const flat = reply as Array<string | number>;
  const owners: OwnerTally[] = [];
  for (let i = 2; i + 1 < flat.length; i += 2) {
    const key = String(flat[i]);
    const cut = key.indexOf("\n");
    owners.push({ sessionId: key.slice(0, cut), hostname: key.slice(cut + 1), rows: Number(flat[i + 1]) });
  }
  return { next: String(flat[0]), scanned: Number(flat[1]), owners };
}
