/**
 * A fetch for the worker library's Pinboard calls that records what each heartbeat answer
 * delivered: the control messages as the worker received them, with the local times the
 * heartbeat was sent and answered (Redis runs on this machine, on the same clock). A test can then
 * assert a message reached its worker even when the worker has long acked it off the queue.
 */
export interface DeliveredMessage {
  msgId: string;
  type: string;
  ns: string;
  id: string;
  deadline: number | null;
  /** When the heartbeat that carried it was sent, and when its answer arrived (ms, Date.now). */
  sentAt: number;
  receivedAt: number;
}

export interface HeartbeatTap {
  fetch: typeof fetch;
  delivered: DeliveredMessage[];
  /** Heartbeats answered 200 so far. */
  beats: number;
}

export function heartbeatTap(inner: typeof fetch = fetch): HeartbeatTap {
  const tap: HeartbeatTap = {
    delivered: [],
    beats: 0,
    fetch: (async (input: RequestInfo | URL, init?: RequestInit) => {
      const sentAt = Date.now();
      const res = await inner(input, init);
      const url = input instanceof Request ? input.url : String(input);
      if (new URL(url).pathname.endsWith("/registry/heartbeat") && res.status === 200) {
        const body = (await res.clone().json()) as {
          messages?: Array<Omit<DeliveredMessage, "sentAt" | "receivedAt">>;
        };
        const receivedAt = Date.now();
        tap.beats++;
        for (const m of body.messages ?? []) tap.delivered.push({ ...m, sentAt, receivedAt });
      }
      return res;
    }) as typeof fetch,
  };
  return tap;
}
