import { connect } from "node:net";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { Keys } from "../../src/redis/keys.ts";
import { type HostileWorker, startHostileWorker } from "../support/hostile-worker.ts";
import { startLatencyProxyFor } from "../support/latency-proxy.ts";
import { until } from "../support/local-worker.ts";
import { startTestPinboard, type TestPinboard } from "../support/pinboard-app.ts";
import { type PinboardProcess, startPinboardProcess } from "../support/pinboard-process.ts";
import { endColdStart, startTestRedis, type TestRedis } from "../support/redis.ts";
import { getRow } from "../support/rows.ts";

/**
 * "Forward failures: … an empty 502 when the client aborted before the forward started", and "a
 * fresh placement whose forward never reached TCP is released so the client's retry re-places".
 *
 * Pinboard reaches Redis only through a latency proxy (one per node of a cluster). With 250 ms
 * added each way, a resolve takes at least 500 ms from the moment it is sent; the client leaves
 * 100 ms after sending its request, so it is gone before any resolution can come back, and the
 * forward has not started. The resolve still mints a placement (the bucket's epoch counter moves)
 * and the placement must be released; the worker must never see the request.
 *
 * Two Pinboard nodes of one fleet share that Redis: the real Node entry (the client closes its
 * TCP connection; nobody can read the answer, so the row, the epoch and the worker tell) and the
 * app in-process (the request's signal is aborted; the answer itself is observable).
 */

const keys = new Keys("pinboard:", 16);
const DELAY_MS = 250;
const LEAVE_AFTER_MS = 100;

let t: TestRedis;
let proxy: { delayMs: number; close(): Promise<void> };
let node: PinboardProcess, inProcess: TestPinboard, worker: HostileWorker;

beforeAll(async () => {
  t = await startTestRedis();
  const through = await startLatencyProxyFor(t);
  proxy = through.proxy;
  const target = through.target;
  // A long lease: no lease runs out while Redis is slow.
  const env = { PINBOARD_LEASE_TTL_MS: "60000" };
  node = await startPinboardProcess({ redis: target, env });
  inProcess = await startTestPinboard(target, env);
  worker = await startHostileWorker();
  await worker.register(node.url, await node.workerCredential(), "/abort");
  await endColdStart(t, keys);
  // From here on, and never lowered: the proxy delays each chunk by the delay in force when it
  // arrived, so lowering it while chunks are in flight would reorder the bytes of a connection.
  proxy.delayMs = DELAY_MS;
});
afterAll(async () => {
  await worker?.close();
  await inProcess?.close();
  await node?.stop();
  await proxy?.close();
  await t?.stop();
});

const reached = (id: string) => worker.seen.filter((s) => s.url.startsWith(`/abort/${id}`));
const epochOf = async (id: string) => BigInt((await t.redis.client.get(keys.epoch(await keys.bucketOf(id)))) ?? "0");

async function forwardOutcomes(): Promise<number> {
  const res = await fetch(`${node.url}/registry/health`, {
    headers: { authorization: `Bearer ${await node.operatorCredential()}` },
  });
  expect(res.status).toBe(200);
  return ((await res.json()) as { resolutions: Record<string, number> }).resolutions.forward ?? 0;
}

/** Sends a GET on a fresh TCP connection and closes the connection `leaveAfterMs` later, unread. */
function leavingClient(path: string, leaveAfterMs: number): Promise<void> {
  const target = new URL(node.url);
  return new Promise((resolve, reject) => {
    const socket = connect(Number(target.port), target.hostname);
    socket.on("error", reject);
    socket.on("connect", () => {
      socket.write(`GET ${path} HTTP/1.1\r\nHost: ${target.host}\r\n\r\n`);
      setTimeout(() => {
        socket.destroy();
        resolve();
      }, leaveAfterMs);
    });
  });
}

describe("a client that leaves while Pinboard is still resolving", () => {
  it("control: a client that stays is forwarded through the same slow Redis", async () => {
    const res = await fetch(`${node.url}/abort/stays`);
    expect(res.status).toBe(200);
    expect(await res.json()).toMatchObject({ method: "GET", bodyBytes: 0 });
    expect(reached("stays")).toHaveLength(1);
    expect(await getRow(t, "/abort", "stays")).toMatchObject({ epoch: expect.stringMatching(/^\d+$/) });
  });

  it("Node entry: the fresh placement is released and the worker never sees the request", async () => {
    const id = "left-node";
    const before = await forwardOutcomes();
    const epochBefore = await epochOf(id);
    await leavingClient(`/abort/${id}`, LEAVE_AFTER_MS);
    // The request is over once its outcome is counted (after the release, which it awaits).
    await until(async () => (await forwardOutcomes()) === before + 1, 20_000, 50);

    // A placement was minted for the request (the bucket's epoch moved) and then released.
    expect(await epochOf(id)).toBeGreaterThan(epochBefore);
    expect(await getRow(t, "/abort", id)).toBeNull();
    expect(reached(id)).toEqual([]);
  });

  it("in-process: the answer is an empty 502, the fresh placement is released, the worker never sees the request", async () => {
    const id = "left-app";
    const epochBefore = await epochOf(id);
    const controller = new AbortController();
    const leave = setTimeout(() => controller.abort(), LEAVE_AFTER_MS);
    const res = await inProcess.app.fetch(
      new Request(`http://pinboard.test/abort/${id}`, { signal: controller.signal }),
    );
    clearTimeout(leave);
    expect(controller.signal.aborted).toBe(true);

    expect(res.status).toBe(502);
    expect(await res.text()).toBe("");
    expect(res.headers.get("content-type")).toBeNull();
    expect(await epochOf(id)).toBeGreaterThan(epochBefore);
    expect(await getRow(t, "/abort", id)).toBeNull();
    expect(reached(id)).toEqual([]);
  });

  it("the client's retry re-places the id and is forwarded", async () => {
    const res = await fetch(`${node.url}/abort/left-node`);
    expect(res.status).toBe(200);
    expect(await res.json()).toMatchObject({ method: "GET", bodyBytes: 0 });
    expect(reached("left-node")).toHaveLength(1);
    expect(await getRow(t, "/abort", "left-node")).toMatchObject({ epoch: expect.stringMatching(/^\d+$/) });
  });
});

/**
 * A client that leaves once its forward reached the worker: the worker holds the instance at the
 * placement's epoch (it may have activated it), so the fresh placement stays. Released, the next
 * request would place the instance elsewhere at a newer epoch while the first worker still holds
 * the old one, and a forward still on its way at the old epoch would be served there beside the new
 * owner (the fault campaign saw that read). The `hang-*` ids of the worker never answer.
 */
describe("a client that leaves once the forward reached the worker", () => {
  const epochSeen = (id: string) => String(reached(id)[0]?.headers["pinboard-epoch"]);

  it("Node entry: the fresh placement stays, at the epoch the worker was sent", async () => {
    const id = "hang-node";
    const target = new URL(node.url);
    const socket = connect(Number(target.port), target.hostname);
    socket.on("error", () => {});
    socket.write(`GET /abort/${id} HTTP/1.1\r\nHost: ${target.host}\r\n\r\n`);
    await until(() => reached(id).length === 1, 20_000, 20);
    socket.destroy();
    // The forward ends once the client is gone; a release, had there been one, would have come by then.
    await until(async () => (await fetch(`${node.url}/abort/stays`)).status === 200, 20_000, 50);
    expect(await getRow(t, "/abort", id)).toMatchObject({ epoch: epochSeen(id) });
  });

  it("in-process: the fresh placement stays, at the epoch the worker was sent", async () => {
    const id = "hang-app";
    const controller = new AbortController();
    const answer = inProcess.app.fetch(new Request(`http://pinboard.test/abort/${id}`, { signal: controller.signal }));
    await until(() => reached(id).length === 1, 20_000, 20);
    controller.abort();
    expect((await answer).status).toBe(502);
    expect(await getRow(t, "/abort", id)).toMatchObject({ epoch: epochSeen(id) });
  });
});
