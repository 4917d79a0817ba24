import fc from "fast-check";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { type Entry, nodeEntry, workersEntry } from "../support/entries.ts";
import { type FramingWorker, type SeenRequest, startFramingWorker } from "../support/framing-worker.ts";
import { type ParsedResponse, rawExchange } from "../support/http-wire.ts";
import { until } from "../support/local-worker.ts";
import { credential } from "../support/pinboard-app.ts";
import { endColdStart, startTestRedis, type TestRedis } from "../support/redis.ts";
import { type CaseRequest, CORPUS, chunked, type Expect, type FramingCase, NS, SMUGGLED } from "./framing-corpus.ts";

/**
 * The differential framing suite, on both entries: each request of the corpus (and of a
 * fast-check property over the framing parts) is written byte for byte on a raw socket through
 * Pinboard to a worker with a strict parser of its own. For every case the worker parses exactly
 * one request per forwarded client request, with exactly the client's body bytes, and the client
 * parses exactly one answer per request; a request whose framing cannot be forwarded faithfully
 * is answered 400 with its reason, its connection closed, nothing forwarded and Redis unchanged.
 */

const ENV = { PINBOARD_LEASE_TTL_MS: "60000" };

const refusal = (reason: string) => ({ error: `request framing refused: ${reason}` });

function requestBytes(request: CaseRequest, id: string, host: string, last: boolean): { head: string; body: string } {
  const lines = [`${request.method} ${NS}/${id} ${request.version ?? "HTTP/1.1"}`, `Host: ${host}`, ...request.headers];
  if (last) lines.push("Connection: close");
  return { head: `${lines.join("\r\n")}\r\n\r\n`, body: request.wire };
}

/** Whether the connection ends with this request: a refusal, by Pinboard or the runtime. */
const ends = (e: Expect): boolean => "refused" in e || "runtimeRefused" in e || ("answered" in e && e.answered === 400);

function statusOf(e: Expect): number {
  if ("refused" in e) return 400;
  if ("runtimeRefused" in e) return 500;
  if ("answered" in e) return e.answered;
  return e.status;
}

const headerOf = (headers: Array<[string, string]>, name: string): string | undefined =>
  headers.find(([n]) => n.toLowerCase() === name)?.[1];

describe.each([
  ["the Node entry", nodeEntry],
  ["the Workers entry", workersEntry],
])("request framing through %s", (entryName, start) => {
  let t: TestRedis;
  let entry: Entry;
  let worker: FramingWorker;
  let host: string;
  const tag = entryName.includes("Node") ? "n" : "w";

  beforeAll(async () => {
    t = await startTestRedis();
    entry = await start(t, ENV);
    worker = await startFramingWorker();
    await worker.register(entry.url, await credential("pinboard:worker"), NS);
    await endColdStart(t);
    host = new URL(entry.url).host;
  }, 90_000);
  afterAll(async () => {
    await worker?.close();
    await entry?.stop();
    await t?.stop();
  });
  afterEach(() => {
    expect(worker.anomalies).toEqual([]);
    expect(worker.seen.filter((s) => s.target.includes("smuggled"))).toEqual([]);
  });

  /**
   * What a refused request must leave as it was: placement rows, overwritten markers and the
   * outlier state (a local refusal never counts against the worker). Headroom bookkeeping moves
   * on its own after earlier forwards, so it is left out.
   */
  async function placementState(): Promise<Record<string, unknown>> {
    const all = await t.snapshot();
    return Object.fromEntries(
      Object.entries(all).filter(([key]) => /placements|overwritten|outliers|ejected/.test(key)),
    );
  }

  /** What this entry must do with a request. */
  const expectOf = (r: CaseRequest): Expect => (tag === "w" && r.onWorkers) || r.expect;

  /** Checks one answer's body against what was expected of its request. */
  function checkAnswer(request: CaseRequest, expected: Expect, response: ParsedResponse): void {
    const body = response.body.toString();
    // On Workers a framing fault may be refused by workerd's own parser before the Worker runs.
    const byRuntime = tag === "w" && response.status === 500;
    if (("refused" in expected && byRuntime) || "runtimeRefused" in expected)
      expect(body).toBe(request.method === "HEAD" ? "" : "Internal Server Error");
    else if ("refused" in expected && request.method === "HEAD")
      expect(headerOf(response.headers, "content-type")).toBe("application/json");
    else if ("refused" in expected)
      expect([expected.refused].flat().map(refusal), body).toContainEqual(JSON.parse(body));
    else if ("answered" in expected && expected.answered === 502) expect(body).toBe("bad gateway");
    else if ("answered" in expected && expected.answered === 400)
      expect(JSON.parse(body)).toEqual({ error: "bad request" });
    else if ("forwarded" in expected && expected.answer !== undefined) expect(body).toBe(expected.answer);
    else if ("forwarded" in expected && request.method !== "HEAD")
      expect(JSON.parse(body)).toMatchObject({ method: request.method, bytes: Buffer.byteLength(expected.forwarded) });
  }

  /** Sends one case and checks everything the suite promises about it. */
  async function check(c: FramingCase, caseTag: string): Promise<{ responses: ParsedResponse[]; seen: SeenRequest[] }> {
    const ids = c.requests.map((r, k) => `${r.scenario}-${caseTag}x${k}`);
    const wire = c.requests.map((r, k) => requestBytes(r, ids[k]!, host, k === c.requests.length - 1));
    const parts = c.pauseBeforeBody ? [wire[0]!.head, wire[0]!.body] : [wire.map((w) => w.head + w.body).join("")];
    const endsAt = c.requests.findIndex((r) => ends(expectOf(r)));
    const requests = endsAt < 0 ? c.requests : c.requests.slice(0, endsAt + 1);
    const expected = requests.map(expectOf);
    // Refused before anything is resolved (a body that breaks off later was placed by then).
    const refusedAtOnce = (e: Expect) => "refused" in e || "runtimeRefused" in e;
    const before = expected.every(refusedAtOnce) ? await placementState() : undefined;

    const got = await rawExchange(
      entry.url,
      parts,
      requests.map((r) => r.method),
      { pauseMs: 300 },
    );
    const raw = got.raw.toString("latin1");
    expect(got.error, raw).toBeUndefined();
    const trailing = got.trailing.toString("latin1");
    if (tag === "w" && c.workersTrailing !== undefined) expect(trailing.startsWith(c.workersTrailing), raw).toBe(true);
    else expect(trailing, raw).toBe("");
    const statuses = got.responses.map((r) => r.status);
    const byRuntime = (e: Expect, k: number) => tag === "w" && "refused" in e && statuses[k] === 500;
    expect(statuses, raw).toEqual(expected.map((e, k) => (byRuntime(e, k) ? 500 : statusOf(e))));
    for (const [k, request] of requests.entries()) checkAnswer(request, expected[k]!, got.responses[k]!);
    // Pinboard closes the connection after its refusal (workerd decides that for itself).
    if (tag === "n" && expected.some(ends)) expect(got.closed).toBe(true);

    const seen = worker.seen.filter((s) => ids.some((id) => s.target === `${NS}/${id}`));
    const forwarded = expected.flatMap((e, k) =>
      "forwarded" in e ? [{ method: requests[k]!.method, target: `${NS}/${ids[k]}`, body: e.forwarded }] : [],
    );
    // Pipelined requests go to the worker on connections of their own, in any order.
    const byTarget = (a: { target: string }, b: { target: string }) => a.target.localeCompare(b.target);
    expect(
      seen.map((s) => ({ method: s.method, target: s.target, body: s.body.toString("latin1") })).sort(byTarget),
    ).toEqual(forwarded.sort(byTarget));
    if (before) expect(await placementState()).toEqual(before);
    // A body that broke off mid-forward: the client is gone, so the fresh placement is released.
    for (const [k, e] of expected.entries()) {
      if ("answered" in e && e.answered === 400)
        await until(async () => !JSON.stringify(await placementState()).includes(`"${ids[k]}"`));
    }
    return { responses: got.responses, seen };
  }

  it.each(CORPUS.map((c, i) => [c.name, c, i] as const))("%s", async (_name, c, i) => {
    const { responses, seen } = await check(c, `${tag}${i}`);
    for (const [name, value] of Object.entries(c.workerSees ?? {})) {
      const got = headerOf(seen[0]!.headers, name);
      expect(got, name).toBeDefined();
      if (value !== true) expect(got).toBe(value);
    }
    for (const name of c.clientNeverSees ?? []) expect(headerOf(responses[0]!.headers, name), name).toBeUndefined();
    // workerd reads the body without a 100 Continue of its own.
    if (c.pauseBeforeBody && tag === "n") expect(responses[0]!.interim).toEqual([100]);
    if (c.requests.some((r) => r.headers.some((h) => /^expect:/i.test(h))))
      expect(headerOf(seen[0]!.headers, "expect")).toBeUndefined();
  });

  it("a property over the framing parts: forwarded exactly, or refused with its reason", async () => {
    let run = 0;
    await fc.assert(
      fc.asyncProperty(framingParts(), async (parts) => {
        const c = { name: "property", requests: [parts.request] };
        await check(c, `${tag}p${run++}`);
      }),
      { numRuns: 40 },
    );
  }, 120_000);
});

const LENGTH_VARIANTS = ["none", "exact", "twice", "list", "signed"] as const;
const CODING_VARIANTS = ["none", "chunked", "CHUNKED", "gzip, chunked", "chunked, chunked", "identity"] as const;

/** One request made of random framing parts, with the outcome the framing rules give it. */
function framingParts() {
  return fc
    .record({
      method: fc.constantFrom("GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS"),
      length: fc.constantFrom(...LENGTH_VARIANTS),
      coding: fc.constantFrom(...CODING_VARIANTS),
      named: fc.subarray(["content-length", "transfer-encoding", "host", "keep-alive", "x-extra", "pinboard-epoch"]),
      body: fc.oneof(
        fc.constant(""),
        fc.constant(SMUGGLED),
        fc.string({ unit: fc.constantFrom("a", "\r", "\n", "0", " ", ":", "G"), maxLength: 40 }),
      ),
    })
    .map(({ method, length, coding, named, body }): { request: CaseRequest } => {
      const size = Buffer.byteLength(body);
      const headers: string[] = [];
      if (named.length > 0) headers.push(`Connection: ${named.join(", ")}`);
      if (named.includes("x-extra")) headers.push("X-Extra: 1");
      if (coding !== "none") headers.push(`Transfer-Encoding: ${coding}`);
      if (length === "exact") headers.push(`Content-Length: ${size}`);
      if (length === "twice") headers.push(`Content-Length: ${size}`, `Content-Length: ${size}`);
      if (length === "list") headers.push(`Content-Length: ${size}, ${size}`);
      if (length === "signed") headers.push(`Content-Length: +${size}`);
      const isChunked = coding === "chunked" || coding === "CHUNKED";
      const wire =
        isChunked || coding !== "none" ? chunked(...(body === "" ? [] : [body])) : length === "none" ? "" : body;
      return {
        request: { method, scenario: "echo", headers, wire, expect: expectedOutcome(method, length, coding, body) },
      };
    });
}

/**
 * What the framing rules (src/data-plane/framing.ts) say of a request, as the suite's own oracle:
 * forwarded with its body, or refused naming one of its faults (a parser names the first it reads).
 */
function expectedOutcome(
  method: string,
  length: (typeof LENGTH_VARIANTS)[number],
  coding: (typeof CODING_VARIANTS)[number],
  body: string,
): CaseRequest["expect"] {
  const faults: string[] = [];
  const chunkedCoding = coding === "chunked" || coding === "CHUNKED";
  if (coding !== "none" && length !== "none") faults.push("both Content-Length and Transfer-Encoding");
  if (coding !== "none" && !chunkedCoding) faults.push("Transfer-Encoding other than chunked");
  if (length === "twice" || length === "list" || length === "signed") faults.push("invalid Content-Length");
  const carries = chunkedCoding || (length !== "none" && body !== "");
  if (faults.length === 0 && carries && (method === "GET" || method === "HEAD")) faults.push(`${method} with a body`);
  if (faults.length > 0) return { refused: faults };
  return { forwarded: carries && method !== "HEAD" ? body : "", status: 200 };
}
