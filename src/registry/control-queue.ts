import type { AppDeps } from "../deps/app-deps.ts";
import { enqueueMessage } from "./lua/index.ts";

/** What this module uses of the app's dependencies. */
export type ControlQueueDeps = Pick<AppDeps, "config" | "redis" | "keys">;

/** A control message as stored: the deadline is absolute (Redis-clock ms) or null (revoke). */
export interface StoredMessage {
  type: "wind_down";
  ns: string;
  id: string;
  deadlineAt: number | null;
}

/** A control message as the heartbeat delivers it: the deadline relative, in seconds. */
export interface DeliveredMessage {
  msgId: string;
  type: "wind_down";
  ns: string;
  id: string;
  deadline: number | null;
}

/** Queues a wind_down for a session's placement; it re-delivers until acked. */
export async function queueWindDown(
  deps: ControlQueueDeps,
  sessionId: string,
  ns: string,
  id: string,
  deadlineAt: number | null,
): Promise<string> {
  const [msgId] = await queueWindDowns(deps, sessionId, [{ ns, id, deadlineAt }]);
  return msgId!;
}

/** Queues several wind_downs for one session in one script call (a whole namespace's worth). */
export async function queueWindDowns(
  deps: ControlQueueDeps,
  sessionId: string,
  orders: ReadonlyArray<{ ns: string; id: string; deadlineAt: number | null }>,
): Promise<string[]> {
  const messages = orders.map(({ ns, id, deadlineAt }) => {
    const message: StoredMessage = { type: "wind_down", ns, id, deadlineAt };
    return { json: JSON.stringify(message), ns, id };
  });
  return enqueueMessage(deps.redis, deps.keys, { sessionId, leaseTtlMs: deps.config.leaseTtlMs, messages });
}

/** Turns the queue's `msgId, JSON, …` pairs into delivered messages, deadlines relative to now. */
export function deliverMessages(flat: string[], nowMs: number): DeliveredMessage[] {
  const out: DeliveredMessage[] = [];
  for (let i = 0; i < flat.length; i += 2) {
    const stored = JSON.parse(flat[i + 1]!) as StoredMessage;
    const deadline =
      typeof stored.deadlineAt === "number" ? Math.max(0, Math.floor((stored.deadlineAt - nowMs) / 1000)) : null;
    out.push({ msgId: flat[i]!, type: stored.type, ns: stored.ns, id: stored.id, deadline });
  }
  return out.sort((a, b) => Number(a.msgId) - Number(b.msgId));
}
