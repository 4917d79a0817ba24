import type { Keys } from "../../redis/keys.ts";
import { runCall } from "../../redis/lua/run-call.ts";
import type { RedisPort } from "../../redis/port.ts";
import { clearOverwrittenScriptCall } from "./scripts.generated.ts";

export interface ClearOverwrittenInput {
  bucket: number;
  env: string;
  ns: string;
  id: string;
  /** The epoch the instance served at. */
  epoch: string;
}

/** Drops an id's overwritten marker at or below the served epoch (lua/clear-overwritten-1.lua); true when cleared. */
export async function clearOverwritten(redis: RedisPort, keys: Keys, input: ClearOverwrittenInput): Promise<boolean> {
  const { bucket, env, ns, id, epoch } = input;
  const call = clearOverwrittenScriptCall(
    { overwritten: keys.overwritten(bucket) },
    { field: `${env}\n${ns}\n${id}`, epoch },
  );
  return Number(await runCall(redis, call)) === 1;
}
