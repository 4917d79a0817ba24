import { Refusal } from "./refusal.ts";

/** Keys the map holds before those at 0 are dropped: workers come and go, their keys must not pile up. */
const IDLE_SESSIONS_KEPT = 1024;

/**
 * Slots per worker on this node: forwards in flight (forwards.maxInflight) or, in a second gate,
 * open WebSockets (PINBOARD_MAX_WEBSOCKETS). Past its cap a request is refused (503 worker
 * inflight cap exceeded, retry) instead of queueing behind a saturated worker.
 *
 * A session whose last forward ends keeps its key at 0: deleting it re-allocated the map's hash
 * table whenever the map emptied, once per forward at a low request rate, and the table, held by
 * the long-lived map, survived young-generation collections. Idle keys are dropped together once
 * there are IDLE_SESSIONS_KEPT keys.
 */
export class InflightGate {
  private readonly counts = new Map<string, number>();

  constructor(private readonly max: number) {}

  /** Takes a slot or throws the inflight refusal; the returned function gives it back (once). */
  acquire(sessionId: string): () => void {
    const known = this.counts.get(sessionId);
    if (known === undefined && this.counts.size >= IDLE_SESSIONS_KEPT) this.dropIdle();
    const current = known ?? 0;
    if (current >= this.max) throw new Refusal("inflight");
    this.counts.set(sessionId, current + 1);
    let released = false;
    return () => {
      if (released) return;
      released = true;
      this.counts.set(sessionId, Math.max(0, (this.counts.get(sessionId) ?? 1) - 1));
    };
  }

  /** Every session with forwards in flight, and how many. */
  *entries(): IterableIterator<[string, number]> {
    for (const entry of this.counts) if (entry[1] > 0) yield entry;
  }

  private dropIdle(): void {
    for (const [sessionId, count] of this.counts) if (count === 0) this.counts.delete(sessionId);
  }
}

/** Wraps a body so that `done` runs once the client has read it all, or cancelled it. */
export function onBodyDone(
  body: ReadableStream<Uint8Array> | null,
  done: () => void,
): ReadableStream<Uint8Array> | null {
  if (!body) {
    done();
    return null;
  }
  const reader = body.getReader();
  return new ReadableStream<Uint8Array>({
    async pull(controller) {
      try {
        const { done: finished, value } = await reader.read();
        if (finished) {
          done();
          controller.close();
        } else {
          controller.enqueue(value);
        }
      } catch (err) {
        done();
        controller.error(err);
      }
    },
    async cancel(reason) {
      done();
      await reader.cancel(reason).catch(() => {});
    },
  });
}
