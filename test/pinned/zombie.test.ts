/**
 * The zombie: a worker process stopped (SIGSTOP) past its lease while a forward waits in its
 * socket, its instance placed on another worker meanwhile, then continued (SIGCONT). The
 * waiting forward must not be answered by the zombie at the old epoch beside the new owner: the
 * worker library sees that its lease lapsed by its own clock and refuses (503, Pinned-Refusal),
 * so Pinboard re-places the request once and the new owner answers it. Found by the fault
 * campaign (npm run chaos), which saw a paused worker answer a read 17 ms after SIGCONT.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import WebSocket from "ws";
import { durableEnv } from "../support/durability.ts";
import { until } from "../support/local-worker.ts";
import { type PinboardProcess, startPinboardProcess } from "../support/pinboard-process.ts";
import { startTestRedis, type TestRedis } from "../support/redis.ts";
import { spawnWorkerProcess, type WorkerProcess } from "../support/spawn-worker.ts";

const LEASE = 2000;

let t: TestRedis;
let durable: TestRedis;
let pb: PinboardProcess;
const workers: WorkerProcess[] = [];

beforeAll(async () => {
  t = await startTestRedis();
  durable = await startTestRedis();
  pb = await startPinboardProcess({
    redis: t,
    // The forward waits out the pause: what the zombie does with it reaches the client.
    env: { PINBOARD_LEASE_TTL_MS: String(LEASE), PINBOARD_FORWARD_TIMEOUT_MS: "30000" },
  });
  for (let b = 0; b < 16; b++) await t.redis.client.set(`pinboard:{${b}}:boot_time`, "0");
}, 60_000);

afterAll(async () => {
  for (const w of workers) w.process.kill("SIGCONT");
  await Promise.all(workers.map((w) => w.kill()));
  await pb?.stop();
  await durable?.stop();
  await t?.stop();
});

async function spawn(name: string, env: Record<string, string> = {}): Promise<WorkerProcess> {
  const w = await spawnWorkerProcess("durable-worker-main.ts", {
    ...env,
    COUNTER: "identity",
    PINBOARD_URL: pb.url,
    CREDENTIAL: await pb.workerCredential(),
    CLIENT_ID: `zombie-${name}`,
    WORKER_NAME: name,
    ...durableEnv(durable),
  });
  workers.push(w);
  return w;
}

interface Answer {
  status: number;
  body: { count?: number; epoch?: string; worker?: string; error?: string };
}

async function get(path: string): Promise<Answer> {
  const res = await fetch(`${pb.url}${path}`, { signal: AbortSignal.timeout(40_000) });
  return { status: res.status, body: (await res.json()) as Answer["body"] };
}

describe("a worker paused past its lease", () => {
  it("does not answer the forward that waited in its socket: the new owner does, at the newer epoch", async () => {
    const zombie = await spawn("a");
    const first = await get("/counter/z1");
    expect(first).toMatchObject({ status: 200, body: { count: 0, worker: "a" } });

    zombie.process.kill("SIGSTOP");
    const waiting = get("/counter/z1");

    // The forward reaches the stopped process' socket and waits there.
    await new Promise((r) => setTimeout(r, 300));
    const heir = await spawn("b");
    // Once the lease is over (and not before: a forward to the stopped process would wait too),
    // Pinboard places the instance on the heir.
    await new Promise((r) => setTimeout(r, LEASE + 500));
    const moved = await until(async () => {
      const a = await get("/counter/z1");
      return a.status === 200 && a.body.worker === "b" ? a : null;
    }, 15_000);
    expect(BigInt(moved.body.epoch!)).toBeGreaterThan(BigInt(first.body.epoch!));

    zombie.process.kill("SIGCONT");
    const answer = await waiting;

    expect(answer).toEqual({
      status: 200,
      body: { count: 0, epoch: moved.body.epoch, worker: "b", pid: heir.process.pid },
    });
  }, 60_000);
});

describe("a WebSocket of a worker paused past its lease", () => {
  it("is closed 1012 when a message arrives after the lease lapsed, and the instance never sees it", async () => {
    // Only this worker serves /probe (an echo), so the socket is surely on it.
    const zombie = await spawn("c", { WS_PROBE: "1" });
    const socket = new WebSocket(`${pb.url.replace("http", "ws")}/probe/z2`);
    const frames: string[] = [];
    socket.on("message", (data) => frames.push(String(data)));
    const closed = new Promise<{ code: number; reason: string }>((resolve) =>
      socket.on("close", (code, reason) => resolve({ code, reason: String(reason) })),
    );
    await until(async () => (frames.length > 0 ? true : null), 10_000);
    expect(JSON.parse(frames[0]!)).toMatchObject({ hello: true, path: "" });
    socket.send("before");
    await until(async () => (frames.includes("before") ? true : null), 10_000);

    zombie.process.kill("SIGSTOP");
    await new Promise((r) => setTimeout(r, LEASE + 500));
    // Sent while the worker is stopped: it waits in the worker's socket until SIGCONT.
    socket.send("after the lease");
    await new Promise((r) => setTimeout(r, 300));
    zombie.process.kill("SIGCONT");

    const noClose = new Promise((resolve) => setTimeout(() => resolve({ code: "none within 10 s", frames }), 10_000));
    expect(await Promise.race([closed, noClose])).toEqual({ code: 1012, reason: "lease lapsed" });
    expect(frames).not.toContain("after the lease");
    await zombie.kill();
  }, 60_000);
});
