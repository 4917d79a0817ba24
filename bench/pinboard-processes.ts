/**
 * One Pinboard process against several: a second Pinboard, the compiled Node entry exactly as
 * `npm start` runs it (dist/src/node.js with package.json's node flags) with PINBOARD_PROCESSES
 * set, on the bench's Redis and settings, so it serves the same fleet and placements as the
 * bench's one-process Pinboard; the two take turns on pinboard-hot. Its CPU and RSS are
 * accounted over its whole process tree.
 */
import { existsSync } from "node:fs";
import { join } from "node:path";
import { startNodeFlags } from "../bin/node-flags.mjs";
import { freePort } from "../src/runtime/node/process/free-port.ts";
import { type Child, killWhenBenchDies, ROOT, spawnNode } from "./children.ts";
import { type LoadSpec, loadWindow } from "./load.ts";
import { descendantsOf } from "./proc-stats.ts";
import { rowName, type ScenarioResult } from "./report.ts";
import type { ScenarioRunner } from "./scenarios.ts";
import { pinboardSettings, type Topology } from "./topology.ts";

const NODE_ENTRY = "dist/src/node.js";

export interface PinboardProcesses {
  url: string;
  /** The process `npm start` would be; the others are below it. */
  pid: number;
  child: Child;
  /** Processes in its tree once it answered: what PINBOARD_PROCESSES did. */
  processCount(): number;
  stop(): Promise<void>;
}

export async function startPinboardProcesses(top: Topology, processes: number): Promise<PinboardProcesses> {
  if (!existsSync(join(ROOT, NODE_ENTRY)))
    throw new Error(`${NODE_ENTRY} is missing: run \`npm run build\` (npm run bench does)`);
  const port = await freePort();
  const env = {
    PORT: String(port),
    HOST: "127.0.0.1",
    REDIS_URL: top.redis.url,
    ...pinboardSettings(top.secret),
    PINBOARD_PROCESSES: String(processes),
  };
  const child = spawnNode(`pinboard-${processes}proc`, NODE_ENTRY, env, startNodeFlags());
  killWhenBenchDies(child.pid);
  const url = `http://127.0.0.1:${port}`;
  for (const deadline = Date.now() + 60_000; ; ) {
    const status = await fetch(`${url}/readyz`).then(
      (r) => {
        void r.arrayBuffer();
        return r.status;
      },
      () => 0,
    );
    if (status === 200) break;
    if (child.process.exitCode !== null || Date.now() > deadline) {
      await child.stop();
      throw new Error(`Pinboard with PINBOARD_PROCESSES=${processes} did not become ready:\n${child.log()}`);
    }
    await new Promise((r) => setTimeout(r, 100));
  }
  return {
    url,
    pid: child.pid,
    child,
    processCount: () => 1 + descendantsOf(child.pid).length,
    stop: () => child.stop(12_000),
  };
}

/**
 * pinboard-hot through the bench's Pinboard and through a two-process one, interleaved over
 * `rounds`; the second gets 2 s of unmeasured load first, like the first did.
 */
export async function compareProcesses(
  top: Topology,
  runner: ScenarioRunner,
  hot: LoadSpec,
  o: { connections: number; rounds: number; log: (msg: string) => void },
): Promise<{ rows: ScenarioResult[]; processCount: number }> {
  const two = await startPinboardProcesses(top, 2);
  try {
    const twoSpec: LoadSpec = {
      ...hot,
      name: rowName("pinboard-hot-2proc", "length"),
      front: "pinboard-hot-2proc",
      url: two.url,
      pids: { ...hot.pids, proxy: { tree: two.pid } },
    };
    await loadWindow(twoSpec, { connections: o.connections, durationS: 2, warmupS: 0 });
    const processCount = two.processCount();
    o.log(`PINBOARD_PROCESSES=2: ${processCount} process(es) in its tree`);
    twoSpec.note = `npm start's entry with PINBOARD_PROCESSES=2: ${processCount} process(es) in its tree; CPU and RSS summed over them`;
    const oneSpec: LoadSpec = {
      ...hot,
      name: rowName("pinboard-hot-1proc", "length"),
      front: "pinboard-hot-1proc",
      note: "the bench's Pinboard (one process), measured beside the next row",
    };
    return { rows: await runner.rounds([oneSpec, twoSpec], o.rounds), processCount };
  } finally {
    await two.stop();
  }
}
