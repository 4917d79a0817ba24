import { type ChildProcess, execFile, spawn } from "node:child_process";
import { rm } from "node:fs/promises";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { promisify } from "node:util";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startNodeFlags } from "../../bin/node-flags.mjs";
import { freePort } from "../../src/runtime/node/process/free-port.ts";
import { startTestRedis, type TestRedis } from "../support/redis.ts";

/**
 * `npm start` runs what `npm run build` compiles (tsconfig.build.json → dist/), not the sources
 * under tsx: the compiled entry must serve, and stop on SIGTERM. Built into a private directory
 * so a concurrent `npm start` or bench keeps its own dist/.
 */

const ROOT = fileURLToPath(new URL("../../", import.meta.url));
const OUT = join(ROOT, ".tmp", `build-test-${process.pid}`);
let t: TestRedis;

beforeAll(async () => {
  t = await startTestRedis();
  await promisify(execFile)(
    process.execPath,
    [join(ROOT, "node_modules/typescript/bin/tsc"), "-p", "tsconfig.build.json", "--outDir", OUT],
    { cwd: ROOT },
  );
}, 120_000);
afterAll(async () => {
  await t?.stop();
  await rm(OUT, { recursive: true, force: true });
});

function exited(child: ChildProcess): Promise<number | null> {
  return new Promise((resolve) => child.once("exit", (code) => resolve(code)));
}

describe("the compiled Node entry", () => {
  it("serves /healthz and /readyz from dist and exits 0 on SIGTERM", async () => {
    const port = await freePort();
    const env: Record<string, string> = { PATH: process.env.PATH ?? "", PORT: String(port), HOST: "127.0.0.1" };
    if (t.clusterNodes) env.REDIS_CLUSTER_NODES = t.clusterNodes;
    else env.REDIS_URL = t.url;
    const child = spawn(process.execPath, [...startNodeFlags(), join(OUT, "src/node.js")], {
      cwd: ROOT,
      env,
      stdio: ["ignore", "ignore", "pipe"],
    });
    const exit = exited(child);
    let stderr = "";
    child.stderr?.on("data", (chunk: Buffer) => (stderr += chunk.toString()));
    try {
      const base = `http://127.0.0.1:${port}`;
      let ready = 0;
      for (let i = 0; i < 200 && ready !== 200; i++) {
        ready = await fetch(`${base}/readyz`).then(
          (r) => r.status,
          () => 0,
        );
        if (ready !== 200) await new Promise((r) => setTimeout(r, 100));
      }
      expect(ready, stderr).toBe(200);
      const health = await fetch(`${base}/healthz`);
      expect(health.status).toBe(200);
      expect(await health.json()).toEqual({ ok: true });
    } finally {
      child.kill("SIGTERM");
    }
    expect(await exit, stderr).toBe(0);
  }, 60_000);
});
