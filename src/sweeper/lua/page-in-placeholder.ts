import type { Keys } from "../../redis/keys.ts";
import { runCall } from "../../redis/lua/run-call.ts";
import type { RedisPort } from "../../redis/port.ts";
import { pageInPlaceholderScriptCall } from "./scripts.generated.ts";

export interface PageInPlaceholderInput {
  bucket: number;
  env: string;
  ns: string;
  id: string;
  /** The resurrection target, "" in single mode. */
  hostname: string;
}

/** Writes an ownerless placeholder row for a durable instance (lua/page-in-placeholder-3.lua); true when written. */
export async function pageInPlaceholder(redis: RedisPort, keys: Keys, input: PageInPlaceholderInput): Promise<boolean> {
  const { bucket, env, ns, id, hostname } = input;
  const call = pageInPlaceholderScriptCall(
    {
      placements: keys.placements(bucket, env, ns),
      overwritten: keys.overwritten(bucket),
      spaces: keys.spaces(bucket),
    },
    { id, hostname, field: `${env}\n${ns}\n${id}`, space: `${env}\n${ns}` },
  );
  return Number(await runCall(redis, call)) === 1;
}
