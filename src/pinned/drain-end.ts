import type { PinnedLogger } from "./types.ts";

export interface DrainEndDeps {
  clientId: string;
  /** Stops heartbeats and re-registers (Registration.halt). */
  halt(): void;
  /** Winds every resident instance down and releases it (WindDowns.windDownAll). */
  windDownAll(): Promise<void>;
  /**
   * Stops serving: refuses new activations, gives the session up (Registration.abandon: Pinboard
   * ended it at the deadline, a deregister would be refused) and closes what is left.
   */
  retire(): void;
  log: PinnedLogger;
  /** The createWorker option, called once the worker no longer serves. */
  onDrained?: () => void;
}

/**
 * The one line a worker drained to its end logs. A restart under the same clientId is drained at
 * once (the drain key outlives its deadline by 7 days, and bounds every session of the client),
 * and `undrain` answers 403 for a client with no registered worker: another clientId it is.
 */
export function drainedMessage(clientId: string): string {
  const id = JSON.stringify(clientId);
  return (
    `drained by the operator (clientId ${id}): the drain deadline passed and this worker no longer serves; ` +
    `to serve again, start it under another clientId (Pinboard holds the drain of ${id} for 7 days past its deadline)`
  );
}

/**
 * The end of a timed operator drain. At its deadline Pinboard lets the worker's session die and
 * bounds every later session of the client by the same deadline (the drain stays for 7 days), so a
 * worker that kept heartbeating would re-register and die every few seconds, vanish from the
 * worker list and fill the audit trail. Instead, at the deadline (or when an answer says it passed)
 * the worker stops heartbeating, winds its instances down and releases them, gives its session up
 * (no deregister: the deadline ended it), logs one line, and settles `promise` (the handle's
 * `drained`) so its process can exit 0. A cordon (a drain without deadline) and a drain lifted
 * before its deadline never get here.
 */
export class DrainEnd {
  readonly promise: Promise<void>;
  private resolve!: () => void;
  private ended = false;

  constructor(private readonly deps: DrainEndDeps) {
    this.promise = new Promise((resolve) => (this.resolve = resolve));
  }

  async end(): Promise<void> {
    if (this.ended) return;
    this.ended = true;
    const { deps } = this;
    deps.halt();
    try {
      await deps.windDownAll();
    } finally {
      deps.retire();
    }
    deps.log.warn(drainedMessage(deps.clientId));
    this.resolve();
    deps.onDrained?.();
  }
}
