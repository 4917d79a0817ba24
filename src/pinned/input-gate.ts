import { AsyncLocalStorage } from "node:async_hooks";

/**
 * One thing an instance runs: a request, a WebSocket event, an alarm, its activation. Storage
 * calls know which event made them through AsyncLocalStorage, so the gate can tell the holder's
 * own calls (which go on) from everyone else's (which wait).
 */
export class InstanceEvent {
  constructor(readonly kind: "request" | "websocket" | "alarm" | "activation" | "detached") {}
}

const running = new AsyncLocalStorage<InstanceEvent>();

/** Runs `fn` as `event`: every storage call it makes, awaited or not, is that event's. */
export function runAs<T>(event: InstanceEvent, fn: () => T): T {
  return running.run(event, fn);
}

/** The instance's event queue is full: the caller answers 503 and tries later. */
export class QueueFullError extends Error {
  constructor(readonly limit: number) {
    super(`instance queue full (${limit} events waiting)`);
    this.name = "QueueFullError";
  }
}

/** The waiting event was given up before its turn (its client went away, the instance retired). */
export class DeliveryCancelledError extends Error {
  constructor(readonly reason: "aborted" | "retired" | "lease-lapsed") {
    super(`event not delivered: ${reason}`);
    this.name = "DeliveryCancelledError";
  }
}

interface Waiter {
  event: InstanceEvent;
  /** A storage call (takes the gate when resumed) or a new event (is delivered). */
  kind: "call" | "delivery";
  resume(): void;
  cancel(err: Error): void;
}

/** Whether storage calls hold the gate (false: allowConcurrency) and how many events may wait. */
export interface InputGateOptions {
  storageHolds: boolean;
  limit: number;
}

/**
 * The input gate of one activation, Durable Objects' rule: while a storage call of one event is
 * in flight, no other event is delivered and no other event's storage call starts; the holder's
 * own code after the call completes runs before anything else (the gate reopens on the next
 * macrotask, after the microtasks that continue the holder). Awaiting anything else (a fetch, a
 * timer) leaves the gate open. Waiters go in order; new events beyond `limit` are refused.
 */
export class InputGate {
  private holder: InstanceEvent | null = null;
  /** Storage calls in flight and blockConcurrencyWhile sections of the holder. */
  private holds = 0;
  private waiting: Waiter[] = [];
  /** The event just delivered from the queue, which may take the gate before the next waiter. */
  private delivered: InstanceEvent | null = null;
  private stepScheduled = false;

  constructor(private readonly options: InputGateOptions) {}

  get queued(): number {
    return this.waiting.length;
  }

  /** Resolves when `event` may run; at once when nothing holds the gate or waits. */
  admit(event: InstanceEvent, signal?: () => AbortSignal | undefined, bounded = true): Promise<void> | null {
    if (this.holder === null && this.waiting.length === 0) return null;
    if (bounded && this.waiting.length >= this.options.limit) throw new QueueFullError(this.options.limit);
    // The signal is asked for only now: on @hono/node-server making one costs an AbortController.
    return this.enqueue(event, "delivery", signal?.());
  }

  /** Runs a storage read of the current event under the gate. */
  read<T>(op: () => Promise<T>): Promise<T> {
    if (!this.options.storageHolds) return op();
    return this.hold(op);
  }

  /**
   * Runs a storage write of the current event. It takes the gate when it is free (or the event
   * holds it), like a read; when another event holds it, the write still goes out at once: it
   * reads nothing, and sending writes in the order they were made keeps the store in step with
   * the memory they were made from (an increment in memory, then its put).
   */
  write<T>(op: () => Promise<T>): Promise<T> {
    if (!this.options.storageHolds) return op();
    const event = running.getStore() ?? new InstanceEvent("detached");
    if (!this.mayTake(event)) return op();
    this.holder = event;
    return this.held(op);
  }

  /** Holds the gate for `fn`'s whole run (blockConcurrencyWhile, a transaction). */
  hold<T>(fn: () => Promise<T>): Promise<T> {
    const event = running.getStore() ?? new InstanceEvent("detached");
    if (this.mayTake(event)) {
      this.holder = event;
      return this.held(fn);
    }
    return this.enqueue(event, "call").then(() => this.held(fn));
  }

  /** Refuses every waiter: the activation is gone. */
  cancelAll(): void {
    for (const waiter of this.waiting.splice(0)) waiter.cancel(new DeliveryCancelledError("retired"));
  }

  private mayTake(event: InstanceEvent): boolean {
    if (this.holder === event) return true;
    return this.holder === null && (this.waiting.length === 0 || this.delivered === event);
  }

  private async held<T>(fn: () => Promise<T>): Promise<T> {
    this.holds++;
    try {
      return await fn();
    } finally {
      if (--this.holds === 0) this.scheduleStep();
    }
  }

  private enqueue(event: InstanceEvent, kind: Waiter["kind"], signal?: AbortSignal): Promise<void> {
    return new Promise<void>((resolve, reject) => {
      const onAbort = () => {
        const at = this.waiting.indexOf(waiter);
        if (at >= 0) this.waiting.splice(at, 1);
        reject(new DeliveryCancelledError("aborted"));
      };
      const waiter: Waiter = {
        event,
        kind,
        resume: () => {
          signal?.removeEventListener("abort", onAbort);
          resolve();
        },
        cancel: (err) => {
          signal?.removeEventListener("abort", onAbort);
          reject(err);
        },
      };
      if (signal?.aborted) return reject(new DeliveryCancelledError("aborted"));
      signal?.addEventListener("abort", onAbort, { once: true });
      this.waiting.push(waiter);
      if (this.holder === null) this.scheduleStep();
    });
  }

  /** On the next macrotask: release the gate if the holder has nothing in flight, then serve a waiter. */
  private scheduleStep(): void {
    if (this.stepScheduled) return;
    this.stepScheduled = true;
    setImmediate(() => {
      this.stepScheduled = false;
      this.delivered = null;
      if (this.holds === 0) this.holder = null;
      this.serveNext();
    });
  }

  private serveNext(): void {
    if (this.holder !== null) return;
    const next = this.waiting.shift();
    if (!next) return;
    if (next.kind === "delivery") {
      // The delivered event runs its first steps before the next waiter is looked at.
      this.delivered = next.event;
      next.resume();
      this.scheduleStep();
      return;
    }
    this.holder = next.event;
    // The new holder's other waiting calls go on too (they were queued while another held).
    const own = this.waiting.filter((w) => w.kind === "call" && w.event === next.event);
    if (own.length) this.waiting = this.waiting.filter((w) => !own.includes(w));
    // `held` counts the resumed calls; keep the gate taken until their continuations run.
    this.holds++;
    next.resume();
    for (const waiter of own) waiter.resume();
    queueMicrotask(() => {
      if (--this.holds === 0) this.scheduleStep();
    });
  }
}
