import cluster from "node:cluster";
import { parseConfig } from "./config/config.ts";
import { describeMinting } from "./runtime/node/dev-store/dev-credentials.ts";
import { clusterMetricsSource } from "./runtime/node/metrics/cluster-metrics.ts";
import { processCount, runProcessCluster } from "./runtime/node/process/process-cluster.ts";
import { isProcessEntry } from "./runtime/node/process/process-entry.ts";
import { describeStartFailure, runServingProcess, SHUTDOWN_GRACE_MS } from "./runtime/node/process/serving-process.ts";
import { type RunningPinboard, startNode } from "./runtime/node/start-node.ts";

export { type RunningPinboard, type StartNodeOptions, startNode } from "./runtime/node/start-node.ts";

/**
 * The Node entry for self-hosting (`npm start`): a lone Pinboard process (startNode, in
 * src/runtime/node/start-node.ts), or with PINBOARD_PROCESSES > 1 the primary that forks them
 * (process-cluster.ts) and each process it forks (serving-process.ts), which runs this file too.
 */
async function main(): Promise<void> {
  if (cluster.isWorker) {
    // One of PINBOARD_PROCESSES, forked by the primary below with the shared Redis and key.
    return runServingProcess(() =>
      startNode(process.env, { devDir: process.cwd(), metricsSource: clusterMetricsSource, banner: false }),
    );
  }
  let processes: number;
  try {
    const config = parseConfig(process.env);
    processes = processCount(config.processes);
    if (processes > 1) return await runProcessCluster({ config, processes, devDir: process.cwd() });
  } catch (err) {
    console.error(describeStartFailure(err));
    process.exit(1);
  }
  // Listening before the start: a signal while redis-server starts must stop it too.
  const signals = stopOnSignals();
  let running: RunningPinboard;
  try {
    running = await startNode(process.env, { devDir: process.cwd() });
  } catch (err) {
    console.error(describeStartFailure(err));
    process.exit(1);
  }
  const minting = describeMinting(running.config.passport);
  if (minting !== undefined && process.env.PINBOARD_PASSPORT_SECRET) console.log(minting);
  signals.started(running);
}

/**
 * SIGTERM and SIGINT stop the lone process gracefully (the server, then the embedded
 * redis-server), then exit 0 (1 past SHUTDOWN_GRACE_MS); one that comes while Pinboard starts
 * stops it once started. A second signal forces: exit(1) at once, whose exit handlers still kill
 * the embedded redis-server (reapOnExit), where the default action would leave it running.
 */
function stopOnSignals(): { started(running: RunningPinboard): void } {
  let running: RunningPinboard | undefined;
  let signalled: string | undefined;
  const stop = () => {
    if (running === undefined || signalled === undefined) return;
    console.error(`pinboard: ${signalled}, shutting down`);
    setTimeout(() => process.exit(1), SHUTDOWN_GRACE_MS).unref();
    running.stop().then(
      () => process.exit(0),
      () => process.exit(1),
    );
  };
  const onSignal = (signal: NodeJS.Signals) => {
    if (signalled !== undefined) {
      console.error(`pinboard: ${signal} again, exiting at once`);
      process.exit(1);
    }
    signalled = signal;
    stop();
  };
  process.on("SIGTERM", onSignal);
  process.on("SIGINT", onSignal);
  return {
    started(value) {
      running = value;
      stop();
    },
  };
}

if (isProcessEntry(import.meta.url)) void main();
