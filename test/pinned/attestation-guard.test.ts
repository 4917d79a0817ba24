import { describe, expect, it } from "vitest";
import WebSocket from "ws";
import { MemoryDurabilityStore } from "../../src/pinned/index.ts";
import {
  attestation,
  attestationWithoutId,
  type LocalWorker,
  SECRET,
  useLocalWorkers,
} from "../support/local-worker.ts";
import { rawRequest } from "../support/raw-http.ts";

/**
 * An attestation names the call it authorises (htm, htu, epoch): the worker library refuses it on
 * any other method, target or epoch with 403 {"detail":"invalid attestation"}, or closes an
 * upgrade with 1008. Local workers, not registered: attestations for LOCAL_AUD signed with SECRET.
 */

let w: LocalWorker;
let prefixed: LocalWorker;
let strict: LocalWorker;
useLocalWorkers(
  {
    w: { durability: new MemoryDurabilityStore() },
    prefixed: { basePath: "/pre" },
    strict: { requireBoundAttestation: true },
  },
  (started) => ({ w, prefixed, strict } = started),
);

const INVALID = { status: 403, body: { detail: "invalid attestation" } };
const bound = (htm: string, htu: string, epoch?: string) => attestation({ htm, htu, epoch });
const answer = async (res: Response) => ({ status: res.status, body: (await res.json()) as unknown });
const counter = (id: string, path: string, epoch = "10") => ({
  count: 0,
  memoryHits: 1,
  epoch,
  path,
  ns: "/counter",
  id,
});

describe("a forward's attestation", () => {
  it("serves the request it names", async () => {
    const token = await bound("GET", "/counter/b1/x?q=1", "10");
    expect(await answer(await w.call("/counter/b1/x?q=1", { attestation: token }))).toEqual({
      status: 200,
      body: counter("b1", "/x"),
    });
  });

  it("is refused replayed on another path, query, method or epoch, and still serves its own", async () => {
    const token = await bound("GET", "/counter/b2/x?q=1", "10");
    const replays: [string, { method?: string; epoch?: string | null }][] = [
      ["/counter/b2/y?q=1", {}],
      ["/counter/b3/x?q=1", {}],
      ["/counter/b2/x?q=2", {}],
      ["/counter/b2/x", {}],
      ["/counter/b2/x?q=1&admin=1", {}],
      ["/counter/b2/x/?q=1", {}],
      ["/counter/b2/x?q=1", { method: "POST" }],
      ["/counter/b2/x?q=1", { method: "DELETE" }],
      ["/counter/b2/x?q=1", { epoch: "11" }],
      ["/counter/b2/x?q=1", { epoch: "010" }],
      ["/counter/b2/x?q=1", { epoch: null }],
    ];
    for (const [path, options] of replays) {
      expect({ path, options, ...(await answer(await w.call(path, { ...options, attestation: token }))) }).toEqual({
        path,
        options,
        ...INVALID,
      });
    }
    expect(await answer(await w.call("/counter/b2/x?q=1", { attestation: token }))).toEqual({
      status: 200,
      body: counter("b2", "/x"),
    });
  });

  it("compares targets as the URL parser reads them, percent-encoding as written", async () => {
    // Pinboard's Node entry passes a ' in the query as the client wrote it; fetch (the Workers
    // entry's transport) escapes it. Either way the worker's Request reads %27.
    for (const htu of ["/counter/b4/x?q='a'", "/counter/b4/x?q=%27a%27"]) {
      const token = await bound("GET", htu, "10");
      const raw = await rawRequest(`${w.url}/counter/b4/x?q='a'`, {
        headers: { "Pinboard-Attestation": token, "Pinboard-Epoch": "10" },
      });
      expect(raw.status).toBe(200);
      const escaped = await w.call("/counter/b4/x?q=%27a%27", { attestation: await bound("GET", htu, "10") });
      expect(escaped.status).toBe(200);
    }
    const plain = await bound("GET", "/counter/b4/a", "10");
    expect(await answer(await w.call("/counter/b4/%61", { attestation: plain }))).toEqual(INVALID);
    const escaped = await bound("GET", "/counter/b4/%61", "10");
    expect(await answer(await w.call("/counter/b4/a", { attestation: escaped }))).toEqual(INVALID);
  });

  it("is relative to the advertise URL's path prefix", async () => {
    const token = await bound("GET", "/counter/p1/x", "10");
    expect(await answer(await prefixed.call("/pre/counter/p1/x", { attestation: token }))).toEqual({
      status: 200,
      body: counter("p1", "/x"),
    });
    expect(await answer(await prefixed.call("/pre/counter/p1/y", { attestation: token }))).toEqual(INVALID);
    const withPrefix = await bound("GET", "/pre/counter/p1/x", "10");
    expect(await answer(await prefixed.call("/pre/counter/p1/x", { attestation: withPrefix }))).toEqual(INVALID);
  });
});

describe("the sweeper's and the operator's calls", () => {
  it("_wake and _alarm take only their own attestation", async () => {
    const wake = await bound("POST", "/counter/s1/_wake", "10");
    expect(await answer(await w.call("/counter/s1/_wake", { method: "POST", attestation: wake }))).toEqual({
      status: 200,
      body: { ok: true },
    });
    const forward = await bound("GET", "/counter/s1", "10");
    expect(await answer(await w.call("/counter/s1/_wake", { method: "POST", attestation: forward }))).toEqual(INVALID);

    const withSecret = { method: "POST", headers: { "Pinboard-Proxy-Secret": SECRET } };
    expect(await answer(await w.call("/counter/s1/_alarm", { ...withSecret, attestation: wake }))).toEqual(INVALID);
    const alarm = await bound("POST", "/counter/s1/_alarm", "10");
    expect(await answer(await w.call("/counter/s1/_alarm", { ...withSecret, attestation: alarm }))).toEqual({
      status: 200,
      body: { fired: false },
    });
    expect(
      await answer(await w.call("/counter/s1/_alarm", { ...withSecret, attestation: alarm, epoch: "11" })),
    ).toEqual(INVALID);
  });

  it("_pinned/stats takes a GET /_pinned/stats attestation without an epoch, and no other", async () => {
    const stats = (token: string) => fetch(`${w.url}/_pinned/stats`, { headers: { "Pinboard-Attestation": token } });
    expect((await stats(await bound("GET", "/_pinned/stats"))).status).toBe(200);
    for (const token of [
      await bound("GET", "/counter/s2", "10"),
      await bound("GET", "/_pinned/stats", "10"),
      await bound("POST", "/_pinned/stats"),
    ]) {
      expect(await answer(await stats(token))).toEqual(INVALID);
    }
    const replayed = await w.call("/counter/s2", { attestation: await bound("GET", "/_pinned/stats") });
    expect(await answer(replayed)).toEqual(INVALID);
  });

  it("_pinned/challenge takes an attestation only for itself", async () => {
    const challenge = (token: string) =>
      fetch(`${w.url}/_pinned/challenge?challenge=x`, { headers: { "Pinboard-Attestation": token } });
    expect(await answer(await challenge(await bound("GET", "/_pinned/challenge?challenge=x")))).toEqual({
      status: 404,
      body: { detail: "unknown challenge" },
    });
    expect(await answer(await challenge(await bound("GET", "/_pinned/stats")))).toEqual({
      status: 403,
      body: { detail: "invalid proxy secret" },
    });
  });
});

describe("attestations that name no request", () => {
  it("are accepted where the call has no epoch unless requireBoundAttestation; a partial binding never is", async () => {
    const stats = (worker: LocalWorker, token: string) =>
      fetch(`${worker.url}/_pinned/stats`, { headers: { "Pinboard-Attestation": token } });
    expect((await stats(w, await attestation())).status).toBe(200);
    expect(await answer(await stats(strict, await attestation()))).toEqual(INVALID);
    expect((await stats(strict, await bound("GET", "/_pinned/stats"))).status).toBe(200);
    expect(
      await answer(await strict.call("/counter/l1", { attestation: await bound("GET", "/counter/l1", "10") })),
    ).toEqual({ status: 200, body: counter("l1", "") });

    for (const partial of [
      { htm: "GET" },
      { htu: "/counter/l2" },
      { epoch: "10" },
      { htm: "GET", epoch: "10" },
      { htu: "/counter/l2", epoch: "10" },
    ]) {
      expect({
        partial,
        ...(await answer(await w.call("/counter/l2", { attestation: await attestation(partial) }))),
      }).toEqual({ partial, ...INVALID });
    }
  });

  it("are refused on a call that carries Pinboard-Epoch, with or without requireBoundAttestation", async () => {
    for (const worker of [w, strict]) {
      for (const token of [
        await attestation(),
        attestationWithoutId(),
        await bound("GET", "/counter/l3"),
        attestationWithoutId({ htm: "GET", htu: "/counter/l3" }),
      ]) {
        expect(await answer(await worker.call("/counter/l3", { attestation: token }))).toEqual(INVALID);
        expect(await answer(await worker.call("/counter/l3", { attestation: token, method: "POST" }))).toEqual(INVALID);
      }
    }
    // The same call attested with its epoch is served.
    expect(await answer(await w.call("/counter/l3", {}))).toEqual({ status: 200, body: counter("l3", "") });
  });
});

describe("a WebSocket upgrade's attestation", () => {
  function upgrade(
    path: string,
    token: string,
    epoch: string,
  ): Promise<{ first: unknown; close: { code: number; reason: string } }> {
    const ws = new WebSocket(`${w.url.replace("http", "ws")}${path}`, {
      headers: { "Pinboard-Attestation": token, "Pinboard-Epoch": epoch },
    });
    let first: unknown = null;
    ws.once("message", (data) => {
      first = JSON.parse(String(data));
      ws.close(1000, "done");
    });
    return new Promise((resolve) =>
      ws.on("close", (code, reason) => resolve({ first, close: { code, reason: reason.toString() } })),
    );
  }

  it("opens the socket it names and closes any other with 1008", async () => {
    const token = await bound("GET", "/room/u1?name=ann", "1");
    expect(await upgrade("/room/u1?name=ann", token, "1")).toEqual({
      first: { hello: "ann", epoch: "1" },
      close: { code: 1000, reason: "done" },
    });
    const refused = { first: null, close: { code: 1008, reason: "invalid attestation" } };
    expect(await upgrade("/room/u2?name=ann", token, "1")).toEqual(refused);
    expect(await upgrade("/room/u1?name=eve", token, "1")).toEqual(refused);
    expect(await upgrade("/room/u1?name=ann", token, "2")).toEqual(refused);
    expect(await upgrade("/room/u1?name=ann", await bound("POST", "/room/u1?name=ann", "1"), "1")).toEqual(refused);
  });
});
