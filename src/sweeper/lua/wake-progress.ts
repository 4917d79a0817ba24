import type { Keys } from "../../redis/keys.ts";
import { runCall } from "../../redis/lua/run-call.ts";
import type { RedisPort, ScriptCall } from "../../redis/port.ts";
import { wakeProgressScriptCall } from "./scripts.generated.ts";

export type WakeOutcome =
  | { outcome: "done"; servedEpoch: string }
  | { outcome: "pending"; nextCheckAt: number }
  | { outcome: "failed"; backoffMs: number; error: string }
  | { outcome: "drop" };

export type WakeProgressInput = {
  bucket: number;
  /** The overwritten marker's field as read, `env \n ns \n id`. */
  field: string;
  /** Failed attempts that park the entry. */
  parkAfter: number;
} & WakeOutcome;

/** The ARGV the outcome fills: the timing (next check or backoff) and the detail (served epoch or error). */
function outcomeArgs(input: WakeOutcome): { timing: string | number; detail: string | number } {
  switch (input.outcome) {
    case "done":
      return { timing: "", detail: input.servedEpoch };
    case "pending":
      return { timing: input.nextCheckAt, detail: "" };
    case "failed":
      return { timing: input.backoffMs, detail: input.error };
    case "drop":
      return { timing: "", detail: "" };
  }
}

/** The script call of one id's bookkeeping (lua/wake-progress-2.lua), for a runMany of several; its reply is parsed by `parkedNow`. */
export function wakeProgressCall(keys: Keys, input: WakeProgressInput): ScriptCall {
  const { bucket, field, outcome, parkAfter } = input;
  return wakeProgressScriptCall(
    { wakes: keys.wakes(bucket), overwritten: keys.overwritten(bucket) },
    { field, outcome, parkAfter, ...outcomeArgs(input) },
  );
}

/** True when wake-progress parked the entry. */
export function parkedNow(reply: unknown): boolean {
  return Number(reply) === 1;
}

/** The durability sweep's bookkeeping for one id (lua/wake-progress-2.lua); true when the entry is parked now. */
export async function wakeProgress(redis: RedisPort, keys: Keys, input: WakeProgressInput): Promise<boolean> {
  return parkedNow(await runCall(redis, wakeProgressCall(keys, input)));
}
