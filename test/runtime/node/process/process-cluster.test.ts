import { spawn } from "node:child_process";
import { fileURLToPath } from "node:url";
import parsePrometheusTextFormat from "parse-prometheus-text-format";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type ChallengeServer, startChallengeServer } from "../../../support/challenge-server.ts";
import { until } from "../../../support/local-worker.ts";
import { type PinboardProcess, startPinboardProcess } from "../../../support/pinboard-process.ts";
import {
  acceptedConnections,
  childPids,
  openAnsweredConnections,
  processExists,
} from "../../../support/process-tree.ts";
import { rawRequest } from "../../../support/raw-http.ts";
import { startTestRedis, type TestRedis } from "../../../support/redis.ts";
import { registerBody } from "../../../support/registration.ts";

/**
 * PINBOARD_PROCESSES=2: the real Node entry as a primary with two node:cluster processes on one
 * port. Which process serves what is read from the OS (/proc: the primary's children and the
 * accepted connections each holds), never from an endpoint.
 */

const ROOT = fileURLToPath(new URL("../../../../", import.meta.url));

let t: TestRedis, pb: PinboardProcess, worker: ChallengeServer;

beforeAll(async () => {
  t = await startTestRedis();
  worker = await startChallengeServer();
  pb = await startPinboardProcess({ redis: t, env: { PINBOARD_PROCESSES: "2", PINBOARD_BASE_PATH: "/pb" } });
});
afterAll(async () => {
  await pb?.stop();
  await worker?.close();
  await t?.stop();
});

const primary = () => pb.process.pid!;
/** /metrics is served outside the base path. */
const metricsUrl = () => `http://127.0.0.1:${pb.port}/metrics`;
/** The primary's node:cluster processes (each runs the entry, src/node.ts). */
const servingProcesses = () => childPids(primary(), "src/node.ts");

/**
 * Opens `count` answered keep-alive connections until each of the primary's two processes holds
 * some of them (a process still starting takes none). Answers the processes and how many
 * requests to `path` were sent in all.
 */
async function servedByBoth(path: string, count = 8): Promise<{ pids: number[]; sent: number }> {
  let sent = 0;
  const pids = await until(
    async () => {
      const children = servingProcesses();
      if (children.length !== 2) return undefined;
      const held = await openAnsweredConnections(pb.port, path, count);
      sent += count;
      try {
        expect(held.statuses.every((s) => s === held.statuses[0])).toBe(true);
        return children.every((pid) => acceptedConnections(pid, pb.port) > 0) ? children : undefined;
      } finally {
        held.close();
      }
    },
    20_000,
    200,
  ).catch((err: Error) => {
    throw new Error(`${err.message}; children ${JSON.stringify(servingProcesses())}; output:\n${pb.output()}`);
  });
  return { pids, sent };
}

type Family = { name: string; type: string; metrics: Array<{ labels?: Record<string, string>; value?: string }> };

async function scrape(): Promise<Map<string, Family>> {
  const res = await fetch(metricsUrl(), { headers: { authorization: `Bearer ${await pb.operatorCredential()}` } });
  expect(res.status).toBe(200);
  const families = parsePrometheusTextFormat(await res.text()) as Family[];
  // Each family once: the aggregate, not one copy per process.
  expect(new Set(families.map((f) => f.name)).size).toBe(families.length);
  return new Map(families.map((f) => [f.name, f]));
}

const total = (families: Map<string, Family>, name: string) =>
  (families.get(name)?.metrics ?? []).reduce((sum, m) => sum + Number(m.value ?? 0), 0);

describe("PINBOARD_PROCESSES=2 (node:cluster)", () => {
  it("serves the port from two processes forked by the primary", async () => {
    const { pids } = await servedByBoth("/pb/healthz");
    expect(pids).toHaveLength(2);
    expect(pids).not.toContain(primary());
  });

  it("answers /metrics with the sum of both processes' counters and one reading of the fleet gauges", async () => {
    const token = await pb.workerCredential();
    const reg = await fetch(`${pb.url}/registry/register`, {
      method: "POST",
      headers: { authorization: `Bearer ${token}`, "content-type": "application/json" },
      body: JSON.stringify(registerBody(worker)),
    });
    expect(reg.status).toBe(200);

    const before = total(await scrape(), "pinboard_resolutions_total");
    // Unknown namespaces: each request is one resolution, counted by the process that took it.
    const { sent } = await servedByBoth("/pb/nowhere/x-{i}");
    const after = await scrape();
    expect(total(after, "pinboard_resolutions_total") - before).toBe(sent);
    // Both processes read the same fleet: its gauges are not summed.
    expect(after.get("pinboard_workers")?.metrics.find((m) => m.labels?.state === "live")?.value).toBe("1");
    expect(after.has("pinboard_process_resident_memory_bytes")).toBe(true);
    // Same authorization as a lone process.
    expect((await fetch(metricsUrl())).status).toBe(401);
  });

  it("forks a new process when one dies, and the port keeps answering meanwhile", async () => {
    const [victim, survivor] = servingProcesses();
    process.kill(victim!, "SIGKILL");
    await until(() => pb.output().includes('"msg":"a pinboard process exited; starting another"'), 10_000).catch(
      (err: Error) => {
        throw new Error(`${err.message}; output:\n${pb.output()}`);
      },
    );
    expect(pb.output()).toContain(`"pid":${victim},"code":null,"signal":"SIGKILL"`);

    for (let i = 0; i < 10; i++) {
      const res = await rawRequest(`${pb.url}/healthz`, { headers: { connection: "close" } });
      expect(res.status).toBe(200);
    }
    // The new process is not asked for metrics before it listens: the scrape does not wait for it.
    await scrape();

    const { pids } = await servedByBoth("/pb/healthz");
    expect(pids).toContain(survivor);
    expect(pids).not.toContain(victim);
  });

  it("stops every process on SIGTERM and exits 0", async () => {
    const children = servingProcesses();
    expect(children).toHaveLength(2);
    await pb.stop();
    expect(pb.process.exitCode).toBe(0);
    expect(children.filter(processExists)).toEqual([]);
    expect(pb.output()).toContain("pinboard: SIGTERM, shutting down");
    await expect(fetch(`${pb.url}/healthz`)).rejects.toThrow();
  });

  it("refuses PINBOARD_PROCESSES=abc at start, naming the variable", async () => {
    const child = spawn(process.execPath, ["--import", "tsx", "src/node.ts"], {
      cwd: ROOT,
      env: { HOME: process.env.HOME ?? "", PATH: process.env.PATH ?? "", PINBOARD_PROCESSES: "abc", ...t.env },
      stdio: ["ignore", "pipe", "pipe"],
    });
    let output = "";
    child.stdout.on("data", (d: Buffer) => (output += d.toString()));
    child.stderr.on("data", (d: Buffer) => (output += d.toString()));
    const code = await new Promise<number | null>((resolve) => child.on("exit", resolve));
    expect(code).toBe(1);
    expect(output).toBe(
      'invalid configuration:\n  PINBOARD_PROCESSES: expected an integer from 1 to 1024 or auto, got "abc"\n',
    );
  });
});
