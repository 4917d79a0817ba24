import { type ChildProcess, spawn } from "node:child_process";
import { get } from "node:http";
import { fileURLToPath } from "node:url";
import { nodeEntryEnv } from "../../scripts/node-entry-env.ts";
import type { PinboardClaim } from "../../src/auth/claims.ts";
import { freePort } from "../../src/runtime/node/process/free-port.ts";
import { reapOnExit } from "../../src/runtime/node/process/reap-on-exit.ts";
import { credential, TEST_PASSPORT_SECRET } from "./pinboard-app.ts";
import { type RedisTarget, redisTargetEnv } from "./redis.ts";

export interface PinboardProcess {
  url: string;
  port: number;
  /** The admin listener's URL (with the base path) when the env sets PINBOARD_ADMIN_PORT. */
  adminUrl?: string;
  passportSecret: string;
  process: ChildProcess;
  /** Everything the process printed so far. */
  output(): string;
  workerCredential(claims?: Partial<PinboardClaim>, extra?: { sub?: string; account?: string }): Promise<string>;
  operatorCredential(claims?: Partial<PinboardClaim>, extra?: { sub?: string; account?: string }): Promise<string>;
  /** SIGTERM and wait for exit. */
  stop(): Promise<void>;
  /** SIGKILL, at once. */
  kill(): void;
}

const ROOT = fileURLToPath(new URL("../../", import.meta.url));

/**
 * Spawns the real Node entry (`tsx src/node.ts`) on a free port and waits until /readyz is 200.
 * Its Redis is `redis` (a TestRedis: its cluster when it is one), `redisUrl` (REDIS_URL) or a
 * cluster's seed nodes `clusterNodes` (REDIS_CLUSTER_NODES).
 */
export interface PinboardProcessOptions {
  redis?: RedisTarget;
  redisUrl?: string;
  clusterNodes?: string;
  env?: Record<string, string>;
  /** Node flags before the entry, e.g. `--inspect=127.0.0.1:0`. */
  nodeArgs?: string[];
  /** TypeScript modules the process imports before the entry (after tsx), e.g. an instrument. */
  preloads?: string[];
}

/**
 * startOnce, again on another free port when the one picked was taken before the process bound
 * it (a free port is only free until someone else listens on it: other tests start servers too).
 */
export async function startPinboardProcess(options: PinboardProcessOptions): Promise<PinboardProcess> {
  for (let attempt = 1; ; attempt++) {
    try {
      return await startOnce(options);
    } catch (err) {
      if (attempt >= 3 || !(err instanceof Error) || !err.message.includes("EADDRINUSE")) throw err;
    }
  }
}

async function startOnce(options: PinboardProcessOptions): Promise<PinboardProcess> {
  if ([options.redis, options.redisUrl, options.clusterNodes].filter(Boolean).length !== 1) {
    throw new Error("startPinboardProcess needs one of redis, redisUrl, clusterNodes");
  }
  const redis = redisTargetEnv(options.redis ?? options.redisUrl ?? { clusterNodes: options.clusterNodes });
  const port = await freePort();
  const child = spawn(
    process.execPath,
    [
      ...(options.nodeArgs ?? []),
      "--import",
      "tsx",
      "--import",
      "./test/support/orphan-guard.ts",
      ...(options.preloads ?? []).flatMap((p) => ["--import", p]),
      "src/node.ts",
    ],
    {
      cwd: ROOT,
      env: nodeEntryEnv(port, redis, TEST_PASSPORT_SECRET, options.env),
      stdio: ["ignore", "pipe", "pipe"],
    },
  );
  // A test file that fails or times out must not leave its processes behind.
  reapOnExit(child);
  let output = "";
  child.stdout?.on("data", (d: Buffer) => (output += d.toString()));
  child.stderr?.on("data", (d: Buffer) => (output += d.toString()));
  const url = `http://127.0.0.1:${port}${options.env?.PINBOARD_BASE_PATH ?? ""}`;

  const deadline = Date.now() + 20_000;
  for (;;) {
    if (child.exitCode !== null) throw new Error(`pinboard exited with ${child.exitCode}:\n${output}`);
    const ready = await readyz(url);
    if (ready) break;
    if (Date.now() > deadline) {
      child.kill("SIGKILL");
      throw new Error(`pinboard did not become ready:\n${output}`);
    }
    await new Promise((r) => setTimeout(r, 50));
  }

  const adminPort = options.env?.PINBOARD_ADMIN_PORT;
  return {
    url,
    port,
    ...(adminPort ? { adminUrl: `http://127.0.0.1:${adminPort}${options.env?.PINBOARD_BASE_PATH ?? ""}` } : {}),
    passportSecret: TEST_PASSPORT_SECRET,
    process: child,
    output: () => output,
    workerCredential: (claims, extra) => credential("pinboard:worker", claims, extra),
    operatorCredential: (claims, extra) => credential("pinboard:operator", claims, extra),
    stop: () =>
      new Promise<void>((resolve) => {
        if (child.exitCode !== null || child.signalCode !== null) return resolve();
        child.once("exit", () => resolve());
        child.kill("SIGTERM");
      }),
    kill: () => {
      child.kill("SIGKILL");
    },
  };
}

/**
 * GET /readyz on a connection of its own, closed after the answer: a pooled keep-alive connection
 * left open by the readiness poll would count against the process's PINBOARD_MAX_CONNECTIONS.
 */
function readyz(url: string): Promise<boolean> {
  return new Promise((resolve) => {
    const req = get(`${url}/readyz`, { agent: false }, (res) => {
      res.resume();
      resolve(res.statusCode === 200);
    });
    req.on("error", () => resolve(false));
    req.setTimeout(2000, () => req.destroy());
  });
}
