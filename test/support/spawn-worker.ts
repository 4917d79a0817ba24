import { type ChildProcess, spawn } from "node:child_process";
import { fileURLToPath } from "node:url";
import { reapOnExit } from "../../src/runtime/node/process/reap-on-exit.ts";

export interface WorkerProcess {
  process: ChildProcess;
  sessionId: string;
  url: string;
  output(): string;
  /** SIGKILL: no deregister, no goodbye. */
  kill(): Promise<void>;
  /** SIGTERM: drains and deregisters. */
  stop(): Promise<void>;
}

const ROOT = fileURLToPath(new URL("../../", import.meta.url));

/** Spawns a worker process (a module under test/support/) and waits for its `ready {…}` line. */
export async function spawnWorkerProcess(script: string, env: Record<string, string>): Promise<WorkerProcess> {
  const child = spawn(
    process.execPath,
    ["--import", "tsx", "--import", "./test/support/orphan-guard.ts", `test/support/${script}`],
    {
      cwd: ROOT,
      env: { PATH: process.env.PATH ?? "", HOME: process.env.HOME ?? "", ...env },
      stdio: ["ignore", "pipe", "pipe"],
    },
  );
  // A test file that fails or times out must not leave its processes behind.
  reapOnExit(child);
  let output = "";
  const ready = new Promise<{ sessionId: string; url: string }>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`worker not ready:\n${output}`)), 20_000);
    child.stdout!.on("data", (d: Buffer) => {
      output += d.toString();
      const line = /^ready (.*)$/m.exec(output);
      if (line) {
        clearTimeout(timer);
        resolve(JSON.parse(line[1]!) as { sessionId: string; url: string });
      }
    });
    child.stderr!.on("data", (d: Buffer) => (output += d.toString()));
    child.once("exit", (code) => reject(new Error(`worker exited with ${code}:\n${output}`)));
  });
  const { sessionId, url } = await ready;
  const exited = new Promise<void>((resolve) => child.once("exit", () => resolve()));
  return {
    process: child,
    sessionId,
    url,
    output: () => output,
    async kill() {
      if (child.exitCode === null && child.signalCode === null) child.kill("SIGKILL");
      await exited;
    },
    async stop() {
      if (child.exitCode === null && child.signalCode === null) child.kill("SIGTERM");
      await exited;
    },
  };
}

/**
 * Identity-counter workers (test/support/durable-worker-main.ts) with durable state in `durable`,
 * one process per name, registered with `pinboardUrl` as `${clientPrefix}-${name}`.
 */
export async function spawnDurableWorkers(
  names: string[],
  options: { pinboardUrl: string; credential: string; clientPrefix: string; durableEnv: Record<string, string> },
): Promise<Map<string, WorkerProcess>> {
  const workers = new Map<string, WorkerProcess>();
  for (const name of names) {
    workers.set(
      name,
      await spawnWorkerProcess("durable-worker-main.ts", {
        COUNTER: "identity",
        PINBOARD_URL: options.pinboardUrl,
        CREDENTIAL: options.credential,
        CLIENT_ID: `${options.clientPrefix}-${name}`,
        WORKER_NAME: name,
        ...options.durableEnv,
      }),
    );
  }
  return workers;
}
