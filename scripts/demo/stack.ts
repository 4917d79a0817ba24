/**
 * The processes of the demo: an embedded redis-server, the Pinboard Node entry (in this
 * process, through startNode), and example worker processes (examples/worker.ts), each a child
 * process. Everything started is registered with a Cleanup, so a failure half-way still stops
 * what did start.
 */
import { type ChildProcess, spawn } from "node:child_process";
import { fileURLToPath } from "node:url";
import { type RunningPinboard, startNode } from "../../src/node.ts";
import { mintDevPassport } from "../../src/runtime/node/dev-store/dev-credentials.ts";
import { aclConfig, newUsers, storeUrl, WORKER_USER } from "../../src/runtime/node/dev-store/dev-store-users.ts";
import { type EmbeddedRedis, startEmbeddedRedis } from "../../src/runtime/node/dev-store/embedded-redis.ts";
import { freePort } from "../../src/runtime/node/process/free-port.ts";
import { reapOnExit } from "../../src/runtime/node/process/reap-on-exit.ts";
import { Operator, sleep } from "./http.ts";

export const ROOT = fileURLToPath(new URL("../../", import.meta.url));

/** Stops things in the reverse order they were started; runs once. */
export class Cleanup {
  private readonly steps: { name: string; run: () => Promise<void> }[] = [];
  private running: Promise<void> | undefined;
  /** Set when a signal (Ctrl-C) started the cleanup: it reached the children too. */
  signalled = false;

  add(name: string, run: () => Promise<void>): void {
    this.steps.push({ name, run });
  }

  run(log: (line: string) => void): Promise<void> {
    this.running ??= (async () => {
      for (const step of this.steps.splice(0).reverse()) {
        try {
          await step.run();
        } catch (err) {
          log(`cleanup of ${step.name} failed: ${err instanceof Error ? err.message : String(err)}`);
        }
      }
    })();
    return this.running;
  }
}

export interface DemoWorker {
  name: string;
  url: string;
  child: ChildProcess;
  pid: number;
  /** Resolves with the exit code or signal once the process is gone. */
  exited: Promise<string>;
  alive(): boolean;
}

export interface DemoStack {
  redis: EmbeddedRedis;
  pinboard: RunningPinboard;
  pinboardUrl: string;
  leaseMs: number;
  workerToken: string;
  operatorToken: string;
  operator: Operator;
  workers: DemoWorker[];
}

export interface StackOptions {
  workers: string[];
  leaseMs: number;
  cleanup: Cleanup;
  log: (line: string) => void;
  /** Every line a worker prints. */
  workerLine: (worker: string, line: string) => void;
  /** Pinboard's listen port; 0 picks a free one. */
  port?: number;
}

export async function startStack(options: StackOptions): Promise<DemoStack> {
  const { cleanup, log } = options;

  // As `npm start`'s dev store: Pinboard's user with a password, the workers' limited to their keys.
  const users = newUsers();
  const redis = await startEmbeddedRedis({ config: aclConfig(users, "pinned:"), password: users.admin });
  cleanup.add("redis-server", () => redis.stop());
  log(`redis-server (pid ${redis.process.pid}) on redis://127.0.0.1:${redis.port}`);

  // A random passport key for this run, and a worker and an operator credential signed with it.
  const passport = await mintDevPassport();
  const pinboard = await startNode({
    PORT: String(options.port || (await freePort())),
    HOST: "127.0.0.1",
    REDIS_URL: redis.url,
    PINBOARD_PASSPORT_SECRET: passport.secret,
    // A short lease so a dead worker's ids move within seconds (the default is 15 s).
    PINBOARD_LEASE_TTL_MS: String(options.leaseMs),
    PINBOARD_SWEEP_INTERVAL_MS: "2000",
    PINBOARD_LOG_LEVEL: process.env.PINBOARD_LOG_LEVEL ?? "warn",
  });
  cleanup.add("pinboard", () => pinboard.stop());
  log(`pinboard (in this process, pid ${process.pid}) on ${pinboard.url}, lease ${options.leaseMs} ms`);

  const operator = new Operator(pinboard.url, passport.operator);
  const workers: DemoWorker[] = [];
  cleanup.add("workers", async () => {
    await Promise.all(workers.map((w) => stopWorker(w, cleanup.signalled)));
  });
  for (const name of options.workers) {
    const worker = await spawnWorker(
      name,
      {
        PINBOARD_URL: pinboard.url,
        PINBOARD_WORKER_TOKEN: passport.worker,
        DURABLE_REDIS_URL: storeUrl(redis.port, users.worker, WORKER_USER),
        CLIENT_ID: name,
        PORT: String(await freePort()),
      },
      options.workerLine,
    );
    workers.push(worker);
  }
  // Generous: on a busy machine tsx alone can take many seconds to start a worker.
  await waitRegistered(operator, workers, 60_000);
  for (const w of workers) log(`${w.name} (pid ${w.pid}) registered, serving ${w.url}`);

  return {
    redis,
    pinboard,
    pinboardUrl: pinboard.url,
    leaseMs: options.leaseMs,
    workerToken: passport.worker,
    operatorToken: passport.operator,
    operator,
    workers,
  };
}

async function spawnWorker(
  name: string,
  env: Record<string, string>,
  onLine: (worker: string, line: string) => void,
): Promise<DemoWorker> {
  // Not detached: a Ctrl-C in the terminal (or a kill of the whole process group) reaches the
  // workers too, so none outlives the demo.
  const child = spawn(process.execPath, ["--import", "tsx", "examples/worker.ts"], {
    cwd: ROOT,
    env: { ...process.env, ...env },
    stdio: ["ignore", "pipe", "pipe"],
  });
  reapOnExit(child);
  const exited = new Promise<string>((resolve) =>
    child.once("exit", (code, signal) => {
      resolve(signal ?? `exit code ${code}`);
    }),
  );
  await new Promise<void>((resolve, reject) => {
    child.once("spawn", resolve);
    child.once("error", reject);
  });
  for (const stream of [child.stdout!, child.stderr!]) {
    let partial = "";
    stream.on("data", (chunk: Buffer) => {
      const lines = (partial + chunk.toString()).split("\n");
      partial = lines.pop() ?? "";
      for (const line of lines) if (line.trim() !== "") onLine(name, line);
    });
  }
  return {
    name,
    url: `http://127.0.0.1:${env.PORT}`,
    child,
    pid: child.pid!,
    exited,
    alive: () => child.exitCode === null && child.signalCode === null,
  };
}

/** SIGTERM (the worker drains and deregisters), SIGKILL if it is still there after a while. */
export async function stopWorker(worker: DemoWorker, signalled: boolean, graceMs = 6000): Promise<void> {
  if (!worker.alive()) return;
  if (signalled) {
    // A Ctrl-C reached the worker as well (same process group): give its own shutdown a moment
    // before signalling again, since a second signal makes it exit at once without deregistering.
    await Promise.race([worker.exited, sleep(1500)]);
    if (!worker.alive()) return;
  }
  worker.child.kill("SIGTERM");
  const done = await Promise.race([worker.exited.then(() => true), sleep(graceMs).then(() => false)]);
  if (!done && worker.alive()) {
    worker.child.kill("SIGKILL");
    await worker.exited;
  }
}

async function waitRegistered(operator: Operator, workers: DemoWorker[], timeoutMs: number): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  const names = new Set(workers.map((w) => w.name));
  for (;;) {
    const dead = workers.find((w) => !w.alive());
    if (dead) throw new Error(`${dead.name} exited (${await dead.exited}) before it registered`);
    const live = await operator.workers().catch(() => []);
    const registered = new Set(live.filter((w) => !w.draining).map((w) => w.clientId));
    if ([...names].every((n) => registered.has(n))) return;
    if (Date.now() > deadline) {
      throw new Error(
        `workers not registered after ${timeoutMs / 1000} s: ${[...names].filter((n) => !registered.has(n)).join(", ")}`,
      );
    }
    await sleep(200);
  }
}
