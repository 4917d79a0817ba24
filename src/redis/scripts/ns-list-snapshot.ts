import { defineScript } from "../../contract/lua-script.ts";
import type { Keys } from "../keys.ts";
import type { RedisPort, RedisReply, ScriptCall } from "../port.ts";

/**
 * ns-list-snapshot: reads one bucket's namespace list with the mirrors of its sessions, for
 * copy-ns-list to seed a bucket that lost its list ("a bucket missing a namespace list copies the
 * previous bucket's"). Writes nothing. Sessions listed without a mirror are left out.
 *
 * KEYS[1] ns list   hash sessionId → expiry \n headroom \n flags
 * KEYS[2] workers   hash sessionId → record JSON
 *
 * Returns {sessionId, record JSON, …}: empty when the bucket has no such list.
 */
const LUA = `
local out = {}
for _, sid in ipairs(redis.call('HKEYS', KEYS[1])) do
  local json = redis.call('HGET', KEYS[2], sid)
  if json then
    out[#out + 1] = sid
    out[#out + 1] = json
  end
end
return out
`;

export const nsListSnapshotScript = defineScript("ns-list-snapshot", LUA, "f5d34073433750c141855f4b2b8cfa955db31242");

export interface NsListSnapshotInput {
  bucket: number;
  hostname: string;
  ns: string;
}

export function nsListSnapshotCall(keys: Keys, input: NsListSnapshotInput): ScriptCall {
  const { bucket, hostname, ns } = input;
  return { script: nsListSnapshotScript, keys: [keys.nsWorkers(bucket, hostname, ns), keys.workers(bucket)], args: [] };
}

/** Flat sessionId, record JSON, …: empty when the bucket has no such list. */
export function parseNsListSnapshot(reply: RedisReply): string[] {
  return reply as string[];
}

export async function nsListSnapshot(redis: RedisPort, keys: Keys, input: NsListSnapshotInput): Promise<string[]> {
  const call = nsListSnapshotCall(keys, input);
  return parseNsListSnapshot(await redis.run(call.script, call.keys, call.args));
}
