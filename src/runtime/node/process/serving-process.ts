import { ConfigError } from "../../../config/config.ts";

/** How long a graceful stop may take before the process exits anyway (1). */
export const SHUTDOWN_GRACE_MS = 10_000;

/** What `npm start` prints when Pinboard cannot start. */
export function describeStartFailure(err: unknown): string {
  if (err instanceof ConfigError) return err.message;
  const message = `pinboard failed to start: ${err instanceof Error ? err.message : err}`;
  const hint = listenHint(err as NodeJS.ErrnoException);
  return hint === undefined ? message : `${message}\n${hint}`;
}

/** What to do when a listener cannot bind: the error names the address, not the setting. */
function listenHint(err: NodeJS.ErrnoException): string | undefined {
  if (err?.syscall !== "listen") return undefined;
  if (err.code === "EADDRINUSE")
    return (
      "another program (another Pinboard?) listens on that port: stop it, or set PORT=… " +
      "(PORT=0 takes a free one); PINBOARD_ADMIN_PORT likewise"
    );
  if (err.code === "EACCES") return "ports below 1024 need privileges: set PORT to 1024 or above";
  if (err.code === "EADDRNOTAVAIL") return "HOST is not an address of this machine: set HOST=127.0.0.1 or 0.0.0.0";
  return undefined;
}

/**
 * One of the PINBOARD_PROCESSES processes (a node:cluster worker, forked by
 * src/runtime/node/process/process-cluster.ts): starts Pinboard as a lone process would, on the port the primary
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
