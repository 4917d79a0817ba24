import { Refusal } from "./outcomes.ts";

/**
 * Forwards in flight per worker on this node. Past forwards.maxInflight a request is refused
 * (503 worker inflight cap exceeded, retry) instead of queueing behind a saturated worker.
 */
export class InflightGate {
  private readonly counts = new Map<string, number>();

  constructor(private readonly max: number) {}

  /** Takes a slot or throws the inflight refusal; the returned function gives it back (once). */
  acquire(sessionId: string): () => void {
    const current = this.counts.get(sessionId) ?? 0;
    if (current >= this.max) throw new Refusal("inflight");
    this.counts.set(sessionId, current + 1);
    let released = false;
    return () => {
      if (released) return;
      released = true;
      const left = (this.counts.get(sessionId) ?? 1) - 1;
      if (left <= 0) this.counts.delete(sessionId);
      else this.counts.set(sessionId, left);
    };
  }

  /** Every session with forwards in flight, and how many. */
  entries(): IterableIterator<[string, number]> {
    return this.counts.entries();
  }
}

/** Wraps a body so that `done` runs once the client has read it all, or cancelled it. */
export function onBodyDone(body: ReadableStream<Uint8Array> | null, done: () => void): ReadableStream<Uint8Array> | null {
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
