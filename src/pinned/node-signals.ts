import type { PinnedWorker } from "./create-worker.ts";
import type { Listening } from "./node-server.ts";

export interface ShutdownOptions {
  /** Default ["SIGTERM", "SIGINT"]. */
  signals?: NodeJS.Signals[];
  /** How long in-flight requests get after draining starts. Default 10000. */
  graceMs?: number;
  /** The server of worker.listen(), closed last. */
  listening?: Listening;
  /** Exit the process when done (default true). */
  exit?: boolean;
}

/**
 * Graceful shutdown on Node: on the first signal the worker drains (Pinboard stops placing on it
 * and it refuses new activations), waits for in-flight requests up to graceMs, deregisters,
 * closes its server and exits. A second signal exits at once. Returns a function that removes
 * the handlers.
 */
export function handleShutdownSignals(worker: PinnedWorker, options: ShutdownOptions = {}): () => void {
  const signals = options.signals ?? ["SIGTERM", "SIGINT"];
  let shuttingDown = false;
  const onSignal = (signal: NodeJS.Signals) => {
    if (shuttingDown) process.exit(1);
    shuttingDown = true;
    void (async () => {
      try {
        await worker.drain().catch(() => {});
        await worker.idle(options.graceMs ?? 10_000);
        await worker.stop();
        await options.listening?.close();
      } finally {
        if (options.exit ?? true) process.exit(signal === "SIGTERM" ? 0 : 130);
      }
    })();
  };
  for (const signal of signals) process.on(signal, onSignal);
  return () => {
    for (const signal of signals) process.off(signal, onSignal);
  };
}
