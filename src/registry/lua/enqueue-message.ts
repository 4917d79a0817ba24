import type { Keys } from "../../redis/keys.ts";
import { runCall } from "../../redis/lua/run-call.ts";
import type { RedisPort } from "../../redis/port.ts";
import { enqueueMessageScriptCall } from "./scripts.generated.ts";

export interface EnqueueMessageInput {
  sessionId: string;
  leaseTtlMs: number;
  /** Each message's JSON (without msgId) and the (ns, id) whose earlier message it replaces. */
  messages: ReadonlyArray<{ json: string; ns: string; id: string }>;
}

/** Queues control messages for one session (lua/enqueue-message-2.lua); the msgIds, in order. */
export async function enqueueMessage(redis: RedisPort, keys: Keys, input: EnqueueMessageInput): Promise<string[]> {
  const call = enqueueMessageScriptCall(
    { queue: keys.queue(input.sessionId), messageIds: keys.messageIds },
    { leaseTtlMs: input.leaseTtlMs, messages: input.messages.flatMap(({ json, ns, id }) => [json, ns, id]) },
  );
  return (await runCall(redis, call)) as string[];
}
