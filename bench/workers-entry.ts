/**
 * The Workers entry on the same load: src/cloudflare.ts bundled the way wrangler bundles it for
 * workerd (ESM; workerd/worker/browser export conditions, so @upstash/redis and jose take their
 * fetch and WebCrypto builds), run in workerd through Miniflare, talking to the bench's Redis
 * through the Upstash REST bridge (scripts/redis-rest.ts) in a process of its own, with
 * @upstash/redis exactly as in production. Same passport secret, prefix, shards and lease as
 * the Node entry, so both read the same registrations and placements.
 */
import { randomBytes } from "node:crypto";
import { Miniflare } from "miniflare";
import { bundleWorker } from "../scripts/bundle-worker.ts";
import { bundledWorkerOptions, workerCompatibility } from "../scripts/worker-compatibility.ts";
import { freePort } from "../src/runtime/node/process/free-port.ts";
import { type Child, killWhenBenchDies, spawnNode } from "./children.ts";
import { findDescendant } from "./proc-stats.ts";

export interface RunningWorkersEntry {
  url: string;
  /** workerd's pid (the process serving requests), when found. */
  pid: number | undefined;
  bridgePid: number;
  stop(): Promise<void>;
}

async function startBridge(redisUrl: string, token: string, delayMs: number): Promise<{ child: Child; url: string }> {
  const port = await freePort();
  const child = spawnNode("redis-rest", "scripts/redis-rest.ts", {
    REDIS_URL: redisUrl,
    UPSTASH_REDIS_REST_TOKEN: token,
    PORT: String(port),
    HOST: "127.0.0.1",
    REDIS_REST_DELAY_MS: String(delayMs),
  });
  killWhenBenchDies(child.pid); // the bridge does not watch its stdin like the bench's own children
  const url = `http://127.0.0.1:${port}`;
  const deadline = Date.now() + 20_000;
  for (;;) {
    const up = await fetch(url, {
      method: "POST",
      headers: { authorization: `Bearer ${token}` },
      body: '["PING"]',
    }).then(
      async (r) => {
        await r.arrayBuffer();
        return true;
      },
      () => false,
    );
    if (up) return { child, url };
    if (child.process.exitCode !== null || Date.now() > deadline) {
      await child.stop();
      throw new Error(`the REST bridge did not come up:\n${child.log()}`);
    }
    await new Promise((r) => setTimeout(r, 100));
  }
}

export async function startWorkersEntry(options: {
  redisUrl: string;
  bindings: Record<string, string>;
  /** Added to every Redis call at the REST bridge, as a regional Upstash would (ms; none by default). */
  bridgeDelayMs?: number;
  /** workerd processes already running (another entry's), so this one's pid is told apart. */
  otherPids?: number[];
}): Promise<RunningWorkersEntry> {
  const token = randomBytes(16).toString("hex");
  const [scriptPath, compatibility, bridge] = await Promise.all([
    bundleWorker(),
    workerCompatibility(),
    startBridge(options.redisUrl, token, options.bridgeDelayMs ?? 0),
  ]);
  let mf: Miniflare | undefined;
  try {
    mf = new Miniflare({
      ...bundledWorkerOptions(scriptPath, compatibility),
      bindings: { ...options.bindings, UPSTASH_REDIS_REST_URL: bridge.url, UPSTASH_REDIS_REST_TOKEN: token },
    });
    const ready = await mf.ready;
    const running = mf;
    const pid = findDescendant(process.pid, "workerd", options.otherPids ?? []);
    if (pid !== undefined) killWhenBenchDies(pid);
    let stopped: Promise<void> | undefined;
    return {
      url: ready.origin,
      pid,
      bridgePid: bridge.child.pid,
      stop() {
        stopped ??= (async () => {
          await running.dispose().catch(() => {});
          await bridge.child.stop();
        })();
        return stopped;
      },
    };
  } catch (err) {
    await mf?.dispose().catch(() => {});
    await bridge.child.stop();
    throw err;
  }
}

/** Waits (10 s at most) until the entry's /readyz answers 200: its fleet claim is made. */
export async function untilReady(url: string, sleep: (ms: number) => Promise<unknown>): Promise<void> {
  for (let i = 0; i < 100; i++) {
    const status = await fetch(`${url}/readyz`).then(
      async (r) => {
        await r.arrayBuffer();
        return r.status;
      },
      () => 0,
    );
    if (status === 200) return;
    await sleep(100);
  }
}
