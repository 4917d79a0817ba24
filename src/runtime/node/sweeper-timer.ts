import type { AppDeps } from "../../deps/app-deps.ts";
import { runSweep } from "../../sweeper/sweep.ts";

/**
 * The Node entry's sweeper: one pass every PINBOARD_SWEEP_INTERVAL_MS (the sweeper lease keeps
 * passes of several nodes apart). A pass never overlaps the previous one on this node.
 */
export function startSweeperTimer(deps: AppDeps): { stop(): Promise<void> } {
  let running: Promise<unknown> = Promise.resolve();
  let stopped = false;
  const tick = () => {
    running = runSweep(deps)
      .catch((err: unknown) =>
        deps.log.warn("sweep pass failed", { error: err instanceof Error ? err.message : String(err) }),
      )
      .finally(() => {
        if (!stopped) timer = setTimeout(tick, deps.config.sweepIntervalMs);
      });
  };
  let timer = setTimeout(tick, deps.config.sweepIntervalMs);
  return {
    async stop() {
      stopped = true;
      clearTimeout(timer);
      await running;
    },
  };
}
