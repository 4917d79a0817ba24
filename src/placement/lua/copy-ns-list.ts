import type { Keys } from "../../redis/keys.ts";
import { runCall } from "../../redis/lua/run-call.ts";
import type { RedisPort } from "../../redis/port.ts";
import { copyNsListScriptCall } from "./scripts.generated.ts";

export interface CopyNsListInput {
  /** The bucket to seed. */
  bucket: number;
  hostname: string;
  ns: string;
  /** Another bucket's ns-list-snapshot: sessionId, record JSON, … */
  snapshot: string[];
}

/**
 * Seeds a bucket that has no list for a namespace with another bucket's (lua/copy-ns-list-7.lua):
 * the number of sessions listed; 0 when the list already existed.
 */
export async function copyNsList(redis: RedisPort, keys: Keys, input: CopyNsListInput): Promise<number> {
  const { bucket, hostname, ns } = input;
  const [nsList, nsExpiries, nsSummary] = keys.nsListKeys(bucket, hostname, ns);
  const call = copyNsListScriptCall(
    {
      workers: keys.workers(bucket),
      clients: keys.clients(bucket),
      workerExpiries: keys.workerExpiries(bucket),
      spent: keys.spent(bucket),
      nsList,
      nsExpiries,
      nsSummary,
    },
    { snapshot: input.snapshot },
  );
  return Number(await runCall(redis, call));
}
