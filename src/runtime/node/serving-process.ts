import { ConfigError } from "../../config.ts";

/** How long a graceful stop may take before the process exits anyway (1). */
export const SHUTDOWN_GRACE_MS = 10_000;

/** What `npm start` prints when Pinboard cannot start. */
export function describeStartFailure(err: unknown): string {
  return err instanceof ConfigError
    ? err.message
    : `pinboard failed to start: ${err instanceof Error ? err.message : err}`;
}

/**
 * One of the PINBOARD_PROCESSES processes (a node:cluster worker, forked by
 * src/runtime/node/process-cluster.ts): starts Pinboard as a lone process would, on the port the primary
 * shares out, and stops it gracefully on SIGTERM or SIGINT, then exits 0. Either signal may come
 * twice (the primary's SIGTERM, and Ctrl-C, which reaches the whole process group): the second
 * changes nothing. One that comes while Pinboard is still starting stops it once started.
 */
export async function runServingProcess(start: () => Promise<{ stop(): Promise<void> }>): Promise<void> {
  let running: { stop(): Promise<void> } | undefined;
  let stopRequested = false;
  let stopping = false;
  const stop = () => {
    if (stopping || running === undefined) return;
    stopping = true;
    setTimeout(() => process.exit(1), SHUTDOWN_GRACE_MS).unref();
    running.stop().then(
      () => process.exit(0),
      () => process.exit(1),
    );
  };
  const onSignal = () => {
    stopRequested = true;
    stop();
  };
  process.on("SIGTERM", onSignal);
  process.on("SIGINT", onSignal);

  try {
    running = await start();
  } catch (err) {
    console.error(describeStartFailure(err));
    process.exit(1);
  }
  if (stopRequested) stop();
}
