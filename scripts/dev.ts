/**
 * `npm run dev`: the Workers entry (src/cloudflare.ts) in `wrangler dev` (workerd), against a private
 * redis-server (or REDIS_URL) through the Upstash-compatible REST bridge, so @upstash/redis runs
 * exactly as on Cloudflare.
 *
 *   PORT=8787 npm run dev
 *
 * Takes the same variables as `npm start` (PORT, HOST, REDIS_URL, PINBOARD_*), validated by the
 * same schema, and hands the PINBOARD_* ones to the Worker through a private env file (never as
 * `--var` arguments, which `ps` shows to every user; ./dev/worker-env-file.ts). With UPSTASH_REDIS_REST_URL
 * and UPSTASH_REDIS_REST_TOKEN set it talks to that REST endpoint instead (no bridge, no local
 * Redis); without either it uses `npm start`'s dev store (.pinboard/redis). With no passport key it
 * uses `npm start`'s development key (.pinboard/dev-passport-secret) and prints credentials, like
 * `npm start`. Crons do not fire in local dev, so this script runs the Worker's cron handler every
 * PINBOARD_SWEEP_INTERVAL_MS (the Node entry's sweeper timer).
 */
import { type ChildProcess, spawn } from "node:child_process";
import { randomBytes } from "node:crypto";
import { realpathSync } from "node:fs";
import { createRequire } from "node:module";
import { createServer } from "node:net";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { type Config, ConfigError, configVariableNames, parseConfig } from "../src/config/config.ts";
import {
  type DevPassport,
  devKeyExposureWarning,
  mintDevPassport,
} from "../src/runtime/node/dev-store/dev-credentials.ts";
import { printDevBanner } from "../src/runtime/node/dev-store/dev-env-file.ts";
import { type DevStore, startDevStore } from "../src/runtime/node/dev-store/dev-store.ts";
import { freePort } from "../src/runtime/node/process/free-port.ts";
import { EnvFileError, type WorkerEnvFile, writeWorkerEnvFile } from "./dev/worker-env-file.ts";
import { type RedisRestServer, startRedisRest } from "./redis-rest.ts";

const ROOT = fileURLToPath(new URL("../", import.meta.url));
const WRANGLER = join(dirname(createRequire(import.meta.url).resolve("wrangler/package.json")), "bin", "wrangler.js");

/** Variables that configure this script (listening, Redis), not the Worker. */
const LOCAL_ONLY = new Set([
  "PORT",
  "HOST",
  "REDIS_URL",
  "REDIS_CLUSTER_NODES",
  "UPSTASH_REDIS_REST_URL",
  "UPSTASH_REDIS_REST_TOKEN",
  "PINBOARD_PROCESSES",
]);

/** The Worker's vars: every configuration variable set in `env` but the local-only ones. */
export function workerVars(env: Record<string, string | undefined>): Record<string, string> {
  const vars: Record<string, string> = {};
  for (const name of configVariableNames) {
    const value = env[name];
    if (LOCAL_ONLY.has(name) || value === undefined || value === "") continue;
    vars[name] = value;
  }
  return vars;
}

function urlHost(host: string): string {
  if (host === "0.0.0.0" || host === "") return "127.0.0.1";
  if (host === "::") return "[::1]";
  return host.includes(":") ? `[${host}]` : host;
}

/** The port is taken: `npm run dev` stops before it starts anything. */
export class PortInUseError extends Error {
  constructor(readonly port: number) {
    super(`port ${port} is in use; set PORT=… (or PORT=0 for a free one)`);
    this.name = "PortInUseError";
  }
}

/**
 * Throws PortInUseError when `host:port` cannot be bound. Without this check a Pinboard already
 * on the port answers the readiness probe (so this script would print "listening" and fresh
 * credentials that the other server does not know), and wrangler fails with a workerd stack.
 */
export async function checkPortFree(port: number, host: string): Promise<void> {
  const probe = createServer();
  await new Promise<void>((resolve, reject) => {
    probe.once("error", (err: NodeJS.ErrnoException) =>
      reject(err.code === "EADDRINUSE" ? new PortInUseError(port) : err),
    );
    probe.listen({ port, host, exclusive: true }, () => probe.close(() => resolve()));
  });
}

let stopping = false;

interface Running {
  redis?: DevStore;
  bridge?: RedisRestServer;
  wrangler?: ChildProcess;
  /** The Worker's settings, secrets included, for `wrangler dev --env-file`. */
  envFile?: WorkerEnvFile;
  sweeper?: ReturnType<typeof setInterval>;
}

async function waitForHealth(url: string, wrangler: ChildProcess, timeoutMs = 120_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!stopping) {
    if (wrangler.exitCode !== null || wrangler.signalCode !== null) {
      throw new Error(`wrangler dev exited (${wrangler.exitCode ?? wrangler.signalCode}) before the Worker answered`);
    }
    const ok = await fetch(`${url}/healthz`, { signal: AbortSignal.timeout(2000) }).then(
      (res) => res.status === 200,
      () => false,
    );
    if (ok) return;
    if (Date.now() > deadline) throw new Error(`the Worker did not answer ${url}/healthz within ${timeoutMs / 1000} s`);
    await new Promise((r) => setTimeout(r, 200));
  }
}

function stopChild(child: ChildProcess | undefined, graceMs = 10_000): Promise<void> {
  if (!child || child.exitCode !== null || child.signalCode !== null) return Promise.resolve();
  return new Promise<void>((resolve) => {
    const kill = setTimeout(() => child.kill("SIGKILL"), graceMs);
    child.once("exit", () => {
      clearTimeout(kill);
      resolve();
    });
    child.kill("SIGTERM");
  });
}

async function stopAll(running: Running): Promise<void> {
  if (running.sweeper) clearInterval(running.sweeper);
  await stopChild(running.wrangler);
  await running.envFile?.remove().catch(() => {});
  await running.bridge?.close().catch(() => {});
  await running.redis?.stop().catch(() => {});
}

async function start(config: Config, running: Running): Promise<void> {
  const env = process.env;
  const vars = workerVars(env);
  let restUrl = config.redis.restUrl;
  let restToken = config.redis.restToken;
  let describeRedis = restUrl ? `REST endpoint ${restUrl}` : "";
  // Before anything starts: a taken port would otherwise be found by wrangler, after the rest.
  if (config.port) await checkPortFree(config.port, config.host);
  if (!restUrl) {
    if (config.redis.clusterNodes) {
      throw new ConfigError([
        "REDIS_CLUSTER_NODES: npm run dev bridges one Redis node; set REDIS_URL to a single server",
      ]);
    }
    let redisUrl = config.redis.url;
    if (!redisUrl) {
      running.redis = await startDevStore(config, process.cwd(), { warn: (message) => console.warn(message) });
      redisUrl = running.redis.url;
      if (stopping) return;
    }
    restToken = randomBytes(24).toString("base64url");
    running.bridge = await startRedisRest({ redisUrl, token: restToken });
    if (stopping) return;
    restUrl = running.bridge.url;
    const store = running.redis ? running.redis.describe : `REDIS_URL ${redisUrl}`;
    describeRedis = `${store} through the REST bridge ${restUrl}`;
  }
  vars.UPSTASH_REDIS_REST_URL = restUrl;
  vars.UPSTASH_REDIS_REST_TOKEN = restToken!;

  let dev: DevPassport | undefined;
  if (!config.passport.secret && !config.passport.jwks) {
    // The key `npm start` keeps in .pinboard/: credentials minted for one work with the other.
    dev = await mintDevPassport(process.cwd());
    vars.PINBOARD_PASSPORT_SECRET = dev.secret;
    const exposure = devKeyExposureWarning(config.host);
    if (exposure !== undefined) console.warn(exposure);
  }

  // PORT=0 means any free port, as for `npm start`; wrangler needs a real one.
  const port = config.port || (await freePort());
  if (stopping) return;
  running.envFile = await writeWorkerEnvFile(vars);
  if (stopping) return;
  const args = [
    WRANGLER,
    "dev",
    "--local",
    "--ip",
    config.host,
    "--port",
    String(port),
    "--show-interactive-dev-session=false",
    "--env-file",
    running.envFile.path,
  ];
  running.wrangler = spawn(process.execPath, args, {
    cwd: ROOT,
    env: {
      ...env,
      // The env file is the Worker's whole configuration: loaded (not .dev.vars), and not
      // overridden by this shell's variables.
      CLOUDFLARE_LOAD_DEV_VARS_FROM_DOT_ENV: "true",
      CLOUDFLARE_INCLUDE_PROCESS_ENV: "false",
      WRANGLER_SEND_METRICS: env.WRANGLER_SEND_METRICS ?? "false",
      // Pinboard never reads request.cf: skip Miniflare's download of it (a 3 s stall offline).
      CLOUDFLARE_CF_FETCH_ENABLED: env.CLOUDFLARE_CF_FETCH_ENABLED ?? "false",
    },
    stdio: ["ignore", "inherit", "inherit"],
  });
  const wrangler = running.wrangler;
  wrangler.once("exit", (code, signal) => {
    if (stopping) return;
    stopping = true;
    console.error(`pinboard dev: wrangler dev exited (${code ?? signal}); stopping`);
    void stopAll(running).then(() => process.exit(code || 1));
  });

  const origin = `http://${urlHost(config.host)}:${port}`;
  const url = `${origin}${config.basePath}`;
  await waitForHealth(url, wrangler);
  if (stopping) return;
  console.log(`pinboard (Workers entry, wrangler dev) listening on ${url}; Redis: ${describeRedis}`);
  console.log(`The cron handler (sweep pass) runs every ${config.sweepIntervalMs} ms (PINBOARD_SWEEP_INTERVAL_MS).`);
  if (dev) await printDevBanner(dev, { url, devDir: process.cwd(), durableRedisUrl: running.redis?.workerUrl });

  // The cron trigger, by hand: wrangler dev serves it at /cdn-cgi/handler/scheduled.
  running.sweeper = setInterval(() => {
    fetch(`${origin}/cdn-cgi/handler/scheduled?cron=${encodeURIComponent("* * * * *")}`, {
      signal: AbortSignal.timeout(config.sweepIntervalMs),
    }).then(
      (res) => res.body?.cancel(),
      () => {},
    );
  }, config.sweepIntervalMs);
  running.sweeper.unref();
}

async function main(): Promise<void> {
  let config: Config;
  try {
    config = parseConfig(process.env);
  } catch (err) {
    console.error(err instanceof ConfigError ? err.message : String(err));
    process.exit(1);
  }
  const running: Running = {};
  let starting: Promise<void> = Promise.resolve();
  const shutdown = (signal: string) => {
    if (stopping) return;
    stopping = true;
    console.error(`pinboard dev: ${signal}, shutting down`);
    const force = setTimeout(() => process.exit(1), 15_000);
    force.unref();
    // Let a start in progress reach a checkpoint first, so nothing it starts is left behind.
    starting
      .catch(() => {})
      .then(() => stopAll(running))
      .then(
        () => process.exit(0),
        () => process.exit(1),
      );
  };
  // `on`, not `once`: a Ctrl-C reaches this process twice (from the terminal's process group and
  // relayed by tsx), and a second signal must not kill it halfway through the cleanup.
  process.on("SIGINT", () => shutdown("SIGINT"));
  process.on("SIGTERM", () => shutdown("SIGTERM"));
  process.on("SIGHUP", () => shutdown("SIGHUP"));
  try {
    starting = start(config, running);
    await starting;
  } catch (err) {
    if (stopping) return;
    stopping = true;
    console.error(
      err instanceof ConfigError || err instanceof EnvFileError
        ? err.message
        : err instanceof PortInUseError
          ? `pinboard dev: ${err.message}`
          : `pinboard dev failed to start: ${err instanceof Error ? err.message : err}`,
    );
    await stopAll(running);
    process.exit(1);
  }
}

function isEntry(): boolean {
  try {
    return !!process.argv[1] && realpathSync(process.argv[1]) === fileURLToPath(import.meta.url);
  } catch {
    return false;
  }
}

if (isEntry()) void main();
