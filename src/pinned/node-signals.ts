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
 * Graceful shutdown on Node: on the first signal the worker drains (Pinboard stops placing on it),
 * hands its instances over (new requests get the in-band refusal and are re-placed elsewhere at
 * once; each instance is released quoting its epoch once its requests in flight are done, or
 * after graceMs), deregisters, closes its server and exits (0 on SIGTERM, 130 on SIGINT). A second
 * signal exits at once (1). A timed operator drain that reaches its deadline (`worker.drained`)
 * closes the server and exits 0 as well: the worker no longer serves, and a supervisor that
 * restarts only failed processes leaves it stopped. Returns a function that removes the handlers.
 */
export function handleShutdownSignals(worker: PinnedWorker, options: ShutdownOptions = {}): () => void {
  const signals = options.signals ?? ["SIGTERM", "SIGINT"];
  let shuttingDown = false;
  let removed = false;
  const finish = async (work: () => Promise<void>, code: number) => {
    try {
      await work();
      await options.listening?.close();
    } finally {
      if (options.exit ?? true) process.exit(code);
    }
  };
  const onSignal = (signal: NodeJS.Signals) => {
    if (shuttingDown) process.exit(1);
    shuttingDown = true;
    void finish(
      async () => {
        await worker.drain().catch(() => {});
        await worker.stop({ graceMs: options.graceMs ?? 10_000 });
      },
      signal === "SIGTERM" ? 0 : 130,
    );
  };
  void worker.drained.then(() => {
    if (removed || shuttingDown) return;
    shuttingDown = true;
    void finish(async () => {}, 0);
  });
  for (const signal of signals) process.on(signal, onSignal);
  return () => {
    removed = true;
    for (const signal of signals) process.off(signal, onSignal);
  };
}
