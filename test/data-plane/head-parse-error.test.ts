import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type Entry, nodeEntry, workersEntry } from "../support/entries.ts";
import { type HostileWorker, startHostileWorker } from "../support/hostile-worker.ts";
import { rawExchange } from "../support/http-wire.ts";
import { credential } from "../support/pinboard-app.ts";
import { endColdStart, startTestRedis, type TestRedis } from "../support/redis.ts";

/**
 * A HEAD whose head the HTTP parser cannot read is answered 400 with headers only: a body to a
 * HEAD would be read by a pipelining client as the next answer. Over raw sockets, with the HEAD
 * after a pipelined request, in the same write or split across writes (node:http then hands over
 * only the later bytes, without the request line). A GET meeting the same error keeps its body.
 *
 * On the Workers entry the parser is workerd's own, which answers before the Worker runs and
 * sends its text body to a HEAD too: recorded here, outside Pinboard's reach (in production
 * Cloudflare's edge, not workerd, reads the client's HTTP).
 */

const NS = "/h";
const BAD = "Bad Header: x\r\n\r\n";
const BAD_REQUEST = JSON.stringify({ error: "bad request" });
const WORKERD_400 = "ERROR: The headers sent by your client are not valid.";

let t: TestRedis;
let worker: HostileWorker;

beforeAll(async () => {
  t = await startTestRedis();
  worker = await startHostileWorker();
});
afterAll(async () => {
  await worker?.close();
  await t?.stop();
});

type EntryOn = { entry: Entry; get: (id: string) => string; head: (id: string) => string };

async function entryOn(start: () => Promise<Entry>): Promise<EntryOn> {
  const entry = await start();
  await worker.register(entry.url, await credential("pinboard:worker"), NS);
  await endColdStart(t);
  const { host } = new URL(entry.url);
  return {
    entry,
    get: (id) => `GET ${NS}/${id} HTTP/1.1\r\nHost: ${host}\r\n\r\n`,
    // A head not yet ended: the bad header line comes after it.
    head: (id) => `HEAD ${NS}/${id} HTTP/1.1\r\nHost: ${host}\r\n`,
  };
}

/** The cases: the parts written (300 ms apart) and the methods answered. */
function cases(get: (id: string) => string, head: (id: string) => string) {
  return {
    "after a GET, in one write": { parts: [get("a1") + head("a2") + BAD], methods: ["GET", "HEAD"] },
    "after a GET, the bad line in a later write": { parts: [get("b1") + head("b2"), BAD], methods: ["GET", "HEAD"] },
    "alone, the bad line in a later write": { parts: [head("c1"), BAD], methods: ["HEAD"] },
    "after a GET and a HEAD, the bad line in a later write": {
      parts: [`${get("d1")}${head("d2")}\r\n${head("d3")}`, BAD],
      methods: ["GET", "HEAD", "HEAD"],
    },
  };
}

/** entryOn for the enclosing describe: started before its tests (within `timeoutMs`), stopped after them. */
function useEntryOn(start: () => Promise<Entry>, timeoutMs: number, ready: (env: EntryOn) => void): void {
  let env: EntryOn | undefined;
  beforeAll(async () => {
    env = await entryOn(start);
    ready(env);
  }, timeoutMs);
  afterAll(() => env?.entry.stop());
}

describe("the Node entry", () => {
  let env: EntryOn;
  useEntryOn(
    () => nodeEntry(t, { PINBOARD_LEASE_TTL_MS: "60000" }),
    60_000,
    (e) => (env = e),
  );

  it.each([
    "after a GET, in one write",
    "after a GET, the bad line in a later write",
    "alone, the bad line in a later write",
    "after a GET and a HEAD, the bad line in a later write",
  ] as const)("a HEAD meeting a parse error %s: 400 with headers only, then the connection closes", async (name) => {
    const { parts, methods } = cases(env.get, env.head)[name];
    const got = await rawExchange(env.entry.url, parts, methods, { pauseMs: 300 });
    expect(got.error).toBeUndefined();
    expect(got.responses.map((r) => r.status)).toEqual([...methods.slice(0, -1).map(() => 200), 400]);
    const last = got.responses.at(-1)!;
    expect(last.headers).toContainEqual(["content-length", "0"]);
    // Not a byte after the 400's head.
    expect(got.trailing.toString("latin1")).toBe("");
    expect(got.closed).toBe(true);
  });

  it("a GET meeting a parse error after a HEAD in the same write keeps its body", async () => {
    const { host } = new URL(env.entry.url);
    const wire = `HEAD ${NS}/e1 HTTP/1.1\r\nHost: ${host}\r\n\r\nGET ${NS}/e2 HTTP/1.1\r\nHost: ${host}\r\n${BAD}`;
    const got = await rawExchange(env.entry.url, [wire], ["HEAD", "GET"]);
    expect(got.responses.map((r) => [r.status, r.body.toString()])).toEqual([
      [200, ""],
      [400, BAD_REQUEST],
    ]);
    expect(got.trailing.toString("latin1")).toBe("");
  });
});

describe("the Workers entry (workerd's own parser)", () => {
  let env: EntryOn;
  useEntryOn(
    () => workersEntry(t, { PINBOARD_LEASE_TTL_MS: "60000" }),
    90_000,
    (e) => (env = e),
  );

  it("answers a HEAD's parse error 400 before the Worker runs, with its text body (recorded)", async () => {
    const { parts, methods } = cases(env.get, env.head)["after a GET, the bad line in a later write"];
    const got = await rawExchange(env.entry.url, parts, methods, { pauseMs: 300 });
    expect(got.responses.map((r) => r.status)).toEqual([200, 400]);
    expect(got.trailing.toString("latin1")).toBe(WORKERD_400);
  });
});
