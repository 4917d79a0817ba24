import type { Keys } from "../../redis/keys.ts";
import { runCall } from "../../redis/lua/run-call.ts";
import type { RedisPort, RedisReply, ScriptCall } from "../../redis/port.ts";
import { nsListSnapshotScriptCall } from "./scripts.generated.ts";

export interface NsListSnapshotInput {
  bucket: number;
  hostname: string;
  ns: string;
}

/** Reads one bucket's namespace list with its sessions' mirrors, for copy-ns-list (lua/ns-list-snapshot-2.lua). */
export function nsListSnapshotCall(keys: Keys, input: NsListSnapshotInput): ScriptCall {
  const { bucket, hostname, ns } = input;
  return nsListSnapshotScriptCall({ nsList: keys.nsWorkers(bucket, hostname, ns), workers: keys.workers(bucket) });
}

/** Flat sessionId, record JSON, …: empty when the bucket has no such list. */
export function parseNsListSnapshot(reply: RedisReply): string[] {
  return reply as string[];
}

export async function nsListSnapshot(redis: RedisPort, keys: Keys, input: NsListSnapshotInput): Promise<string[]> {
  return parseNsListSnapshot(await runCall(redis, nsListSnapshotCall(keys, input)));
}
