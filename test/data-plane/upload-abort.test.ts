import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { Keys } from "../../src/redis/keys.ts";
import { cutUpload, stalledUpload, uploadHead } from "../support/cut-upload.ts";
import { type Entry, nodeEntry, workersEntry } from "../support/entries.ts";
import { type HostileWorker, startHostileWorker } from "../support/hostile-worker.ts";
import { until } from "../support/local-worker.ts";
import { credential, startTestPinboard, type TestPinboard } from "../support/pinboard-app.ts";
import { endColdStart, startTestRedis, type TestRedis } from "../support/redis.ts";
import { getRow, rowKey } from "../support/rows.ts";

/**
 * "A forward counts against a worker only for what the worker did": a client that cuts its upload
 * (before its head ends, at the first body byte, mid-body, a byte short, after the last byte while
 * the worker is still answering) or stalls it never counts toward the worker's outlier ejection,
 * and leaves the outlier state and the placements as they were; the forward timeout starts at the
 * request's last byte, and a stalled upload is the client's, under the request timeout (408). On
 * both entries, over raw sockets, against two workers (so that an ejection is possible: never more
 * than half the workers at once). The controls at the end show the same bookkeeping still ejects a
 * worker that really fails, and still times out a worker that does not answer a complete upload.
 */

const NS = "/up";
const keys = new Keys("pinboard:", 16);
const FORWARD_TIMEOUT_MS = 1000;
const ENV = {
  PINBOARD_LEASE_TTL_MS: "60000",
  PINBOARD_FORWARD_TIMEOUT_MS: String(FORWARD_TIMEOUT_MS),
  PINBOARD_HEADERS_TIMEOUT_MS: "1000",
  PINBOARD_REQUEST_TIMEOUT_MS: "2500",
};
const DECLARED = 100_000;
/** Long enough for a miscounted failure (a forward timeout among them) to have been written. */
const SETTLE_MS = 2 * FORWARD_TIMEOUT_MS;

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const body = (n: number) => Buffer.alloc(n, 0x78);

describe.each([
  ["the Node entry", nodeEntry],
  ["the Workers entry", workersEntry],
])("a client's cut or stalled upload through %s", (_name, start) => {
  let t: TestRedis;
  let entry: Entry;
  let workers: HostileWorker[];
  /** Ids placed before the cuts (an id's owner answers a normal request after them). */
  const placed = ["echo-0", "echo-1", "echo-2", "slow-0"];
  let tries = 0;

  beforeAll(async () => {
    t = await startTestRedis();
    entry = await start(t, ENV);
    workers = [await startHostileWorker(), await startHostileWorker()];
    const token = await credential("pinboard:worker");
    for (const worker of workers) await worker.register(entry.url, token, NS);
    await endColdStart(t);
    for (const id of placed) expect((await fetch(`${entry.url}${NS}/${id}?ms=0`)).status).toBe(200);
  }, 90_000);
  afterAll(async () => {
    for (const worker of workers ?? []) await worker.close();
    await entry?.stop();
    await t?.stop();
  });

  /** Placement rows, overwritten markers, the outlier runs and the ejections. */
  async function placementState(): Promise<Record<string, unknown>> {
    const all = await t.snapshot();
    return Object.fromEntries(
      Object.entries(all).filter(([key]) => /placements|overwritten|outliers|ejected/.test(key)),
    );
  }

  /** A path no earlier request used, and a wait for it to reach a worker (the forward has started). */
  function fresh(id: string, query = ""): { path: string; reached: () => Promise<unknown> } {
    const path = `${NS}/${id}?try=${++tries}${query}`;
    const reached = () => until(() => workers.some((w) => w.seen.some((s) => s.url === path)), 5000);
    return { path, reached };
  }

  it("20 uploads cut at different offsets count nothing against the worker and change no placement", async () => {
    const before = await placementState();
    expect(Object.keys(before).some((key) => key.includes("outliers") || key.includes("ejected"))).toBe(false);

    // Before the head ends: nothing is forwarded.
    for (const cutAt of [20, 60]) {
      const { path } = fresh("echo-0");
      await cutUpload(entry.url, Buffer.from(uploadHead(entry.url, path, DECLARED).slice(0, cutAt)), () => sleep(100));
    }
    // Cut at a body offset, once the forward has started: none, one byte, mid-body, one byte short.
    // With no body byte yet the worker may not have seen the head (undici sends it with the first
    // chunk): the cut comes once the forward has had time to start.
    const short: string[] = [];
    for (const [k, offset] of [0, 0, 1, 1000, 16_384, 50_000, 65_536, 90_000, DECLARED - 1, DECLARED - 1].entries()) {
      const { path, reached } = fresh(placed[k % 3]!);
      short.push(path);
      const head = Buffer.from(uploadHead(entry.url, path, DECLARED));
      await cutUpload(entry.url, Buffer.concat([head, body(offset)]), offset === 0 ? () => sleep(300) : reached);
    }
    // Chunked, cut mid-chunk, between chunks, and before the last chunk's end.
    for (const wire of ["10\r\n0123", "5\r\nabcde\r\n", "5\r\nabcde\r\n0\r\n"]) {
      const { path, reached } = fresh("echo-1");
      const head = `POST ${path} HTTP/1.1\r\nHost: ${new URL(entry.url).host}\r\nTransfer-Encoding: chunked\r\n\r\n`;
      await cutUpload(entry.url, Buffer.from(head + wire), reached);
    }
    // After the last byte, while the worker is still answering (it answers within the forward timeout).
    for (let i = 0; i < 5; i++) {
      const { path, reached } = fresh("slow-0", `&ms=${FORWARD_TIMEOUT_MS / 2}`);
      await cutUpload(entry.url, Buffer.concat([Buffer.from(uploadHead(entry.url, path, 1000)), body(1000)]), reached);
    }
    expect(tries).toBe(20);

    await sleep(SETTLE_MS);
    expect(await placementState()).toEqual(before);
    // No worker was handed a cut body as if it were whole.
    const ended = workers.flatMap((w) => w.seen).filter((s) => short.includes(s.url) && s.bodyBytes !== undefined);
    expect(ended).toEqual([]);
  }, 60_000);

  it("5 stalled uploads are answered 408 request timeout, count nothing, and keep the fresh placement the worker got", async () => {
    const before = await placementState();
    // The last names an id never placed: its fresh placement stays, since the worker has the
    // request (and may hold the instance at that epoch): a release would let the next request
    // place it elsewhere beside that activation.
    const answers = await Promise.all(
      ["echo-0", "echo-1", "echo-2", "echo-0", "fresh-0"].map((id) => {
        const { path } = fresh(id);
        const wire = Buffer.concat([Buffer.from(uploadHead(entry.url, path, DECLARED)), body(10)]);
        return stalledUpload(entry.url, wire, { dripMs: 200, timeoutMs: 10_000 });
      }),
    );
    for (const answer of answers) {
      expect({ status: answer.status, body: answer.body }).toEqual({
        status: 408,
        body: JSON.stringify({ error: "request timeout" }),
      });
      // The upload was still going (a byte every 200 ms) well past the forward timeout.
      expect(answer.dripped).toBeGreaterThan(FORWARD_TIMEOUT_MS / 200);
    }
    await sleep(SETTLE_MS);
    const row = await getRow(t, NS, "fresh-0");
    expect(row?.sessionId).toMatch(/^[0-9a-f]{32}$/);
    expect(row?.epoch).toMatch(/^[0-9]+$/);
    // Apart from that row, nothing changed.
    await t.redis.client.hdel(await rowKey(NS, "fresh-0"), "fresh-0");
    expect(await placementState()).toEqual(before);
  }, 60_000);

  it("every worker that owns a placed id still answers a full upload to it", async () => {
    for (const id of placed.slice(0, 3)) {
      const res = await fetch(`${entry.url}${NS}/${id}`, { method: "POST", body: body(DECLARED) });
      expect(res.status).toBe(200);
      expect(await res.json()).toMatchObject({ method: "POST", bodyBytes: DECLARED });
    }
  });

  it("controls: a worker that sits on a complete upload times out (504), five 502s eject it", async () => {
    const hang = await fetch(`${entry.url}${NS}/hang-0`, { method: "POST", body: body(1000) });
    expect(hang.status).toBe(504);
    expect(await hang.text()).toBe("upstream timeout");
    const hanging = (await getRow(t, NS, "hang-0"))!.sessionId;
    await until(async () => (await t.redis.client.hget(keys.outliers, hanging))?.startsWith("1\n"), 5000);

    for (let i = 0; i < 5; i++) {
      const res = await fetch(`${entry.url}${NS}/fail-0`, { method: "POST", body: body(1000) });
      expect(res.status).toBe(502);
      expect(await res.text()).toBe("failing");
    }
    const failing = (await getRow(t, NS, "fail-0"))!.sessionId;
    for (const bucket of keys.allBuckets())
      await until(async () => Number(await t.redis.client.hget(keys.ejected(bucket), failing)) > Date.now(), 5000);
  }, 30_000);
});

/**
 * The same fetch transport on undici (the app in-process, as tests and the Hono app serve it
 * wherever it runs the data plane itself): no native pipe there, so the transport counts the body
 * itself; a body that errors, or ends short of its Content-Length without an error, is the
 * client's, and a body that stalls gets the 408.
 */
describe("a client's cut or stalled upload through the fetch transport on undici", () => {
  let t: TestRedis;
  let node: Entry;
  let app: TestPinboard;
  let workers: HostileWorker[];

  beforeAll(async () => {
    t = await startTestRedis();
    node = await nodeEntry(t, ENV);
    app = await startTestPinboard(t, ENV);
    workers = [await startHostileWorker(), await startHostileWorker()];
    const token = await credential("pinboard:worker");
    for (const worker of workers) await worker.register(node.url, token, NS);
    await endColdStart(t);
    expect((await app.app.fetch(new Request(`http://pinboard.test${NS}/echo-0`))).status).toBe(200);
  }, 60_000);
  afterAll(async () => {
    for (const worker of workers ?? []) await worker.close();
    await app?.close();
    await node?.stop();
    await t?.stop();
  });

  const outlierState = async () =>
    Object.fromEntries(Object.entries(await t.snapshot()).filter(([key]) => /outliers|ejected/.test(key)));

  /** A POST declaring DECLARED bytes whose body sends `sent` bytes and then does `then`. */
  async function upload(sent: number, then: "error" | "end" | "stall"): Promise<Response> {
    const stream = new ReadableStream<Uint8Array>({
      start(controller) {
        controller.enqueue(new Uint8Array(body(sent)));
        if (then === "error") setTimeout(() => controller.error(new Error("client gone")), 100);
        if (then === "end") setTimeout(() => controller.close(), 100);
      },
    });
    const init = { method: "POST", headers: { "content-length": String(DECLARED) }, body: stream, duplex: "half" };
    return await app.app.fetch(new Request(`http://pinboard.test${NS}/echo-0`, init as RequestInit));
  }

  it("a body that breaks off or ends short is the client gone: an empty 502, nothing counted", async () => {
    const before = await outlierState();
    for (let i = 0; i < 3; i++) {
      for (const then of ["error", "end"] as const) {
        const res = await upload(1000 * (i + 1), then);
        expect({ status: res.status, body: await res.text() }).toEqual({ status: 502, body: "" });
      }
    }
    await sleep(SETTLE_MS);
    expect(await outlierState()).toEqual(before);
  }, 30_000);

  it("a body that stalls is answered 408 request timeout, nothing counted", async () => {
    const before = await outlierState();
    const res = await upload(10, "stall");
    expect({ status: res.status, body: await res.json() }).toEqual({ status: 408, body: { error: "request timeout" } });
    await sleep(SETTLE_MS);
    expect(await outlierState()).toEqual(before);
  }, 30_000);
});
