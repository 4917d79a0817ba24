import { randomBytes } from "node:crypto";
import type { Readable } from "node:stream";
import { Miniflare } from "miniflare";
import { bundleWorker } from "../../scripts/bundle-worker.ts";
import { type RedisRestServer, startRedisRest } from "../../scripts/redis-rest.ts";
import { bundledWorkerOptions, workerCompatibility } from "../../scripts/worker-compatibility.ts";
import { TEST_PASSPORT_SECRET } from "./pinboard-app.ts";
import type { TestRedis } from "./redis.ts";

export { bundleWorker };

export interface WorkersEntry {
  /** Base URL of the Worker on loopback (no trailing slash), for real HTTP `fetch(url + path)`. */
  url: string;
  mf: Miniflare;
  /** The REST bridge the Worker's @upstash/redis talks to (setToken rotates its token). */
  bridge: RedisRestServer;
  /** The REST token the Worker holds (UPSTASH_REDIS_REST_TOKEN). */
  token: string;
  /** Every line the Worker wrote to stdout and stderr so far (its JSON log lines among them). */
  logs(): string[];
  /** Runs the Worker's cron handler once (a sweep pass) and waits for it to finish. */
  scheduled(cron?: string): Promise<void>;
  stop(): Promise<void>;
}

/**
 * Runs the Workers entry (src/cloudflare.ts, bundled) inside workerd through Miniflare, talking to
 * the given Redis (over every node of a cluster) through the Upstash REST bridge with
 * @upstash/redis exactly as in production. `env` adds or overrides bindings (PINBOARD_* vars);
 * the passport secret is TEST_PASSPORT_SECRET.
 */
export async function startWorkersEntry(options: {
  redis: Pick<TestRedis, "url" | "clusterNodes">;
  env?: Record<string, string>;
  /** The bridge's max request size (its default, Upstash's 1,000,000 bytes, otherwise). */
  bridgeMaxBodyBytes?: number;
  /** Puts something in front of the bridge (a proxy that can hang): the URL the Worker gets instead of the bridge's. */
  restUrl?: (bridge: RedisRestServer) => Promise<string>;
}): Promise<WorkersEntry> {
  const [scriptPath, compatibility] = await Promise.all([bundleWorker(), workerCompatibility()]);
  const token = randomBytes(16).toString("hex");
  const { url, clusterNodes } = options.redis;
  const bridge = await startRedisRest({
    token,
    ...(clusterNodes ? { clusterNodes: clusterNodes.split(",") } : { redisUrl: url }),
    ...(options.bridgeMaxBodyBytes !== undefined ? { maxBodyBytes: options.bridgeMaxBodyBytes } : {}),
  });
  const restUrl = options.restUrl ? await options.restUrl(bridge) : bridge.url;
  const lines: string[] = [];
  // Kept for the test to read, and passed on as Miniflare would print them by default.
  const collect = (stream: Readable, out: NodeJS.WriteStream) => {
    let rest = "";
    stream.setEncoding("utf8");
    stream.on("data", (chunk: string) => {
      out.write(chunk);
      const parts = (rest + chunk).split("\n");
      rest = parts.pop() ?? "";
      for (const part of parts) lines.push(part);
    });
  };
  let mf: Miniflare | undefined;
  try {
    mf = new Miniflare({
      ...bundledWorkerOptions(scriptPath, compatibility),
      handleRuntimeStdio(stdout: Readable, stderr: Readable) {
        collect(stdout, process.stdout);
        collect(stderr, process.stderr);
      },
      bindings: {
        PINBOARD_PASSPORT_SECRET: TEST_PASSPORT_SECRET,
        PINBOARD_LOG_LEVEL: "warn",
        ...options.env,
        UPSTASH_REDIS_REST_URL: restUrl,
        UPSTASH_REDIS_REST_TOKEN: token,
      },
    });
    const ready = await mf.ready;
    const running = mf;
    const url = ready.origin + (options.env?.PINBOARD_BASE_PATH ?? "");
    let stopped: Promise<void> | undefined;
    return {
      url,
      mf: running,
      bridge,
      token,
      logs: () => [...lines],
      async scheduled(cron = "* * * * *") {
        const worker = await running.getWorker();
        const result = await worker.scheduled({ cron, scheduledTime: new Date() });
        if (result.outcome !== "ok") throw new Error(`scheduled handler ended with outcome ${result.outcome}`);
      },
      stop() {
        stopped ??= (async () => {
          await running.dispose();
          await bridge.close();
        })();
        return stopped;
      },
    };
  } catch (err) {
    await mf?.dispose().catch(() => {});
    await bridge.close();
    throw err;
  }
}
