import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type {
  DurabilityStore,
  Instance,
  InstanceContext,
  PinnedWebSocket,
  RequestContext,
} from "../../src/pinned/index.ts";
import { RedisDurabilityStore } from "../../src/pinned/index.ts";
import { durableStore } from "../support/durability.ts";
import { HeldMemoryStore, LateMemoryStore } from "../support/gated-store.ts";
import { freshGate, type Gate } from "../support/gates.ts";
import { attestation, type LocalWorker, startLocalWorker } from "../support/local-worker.ts";
import { startTestRedis, type TestRedis } from "../support/redis.ts";
import { openSocket, type TestSocket } from "../support/ws-client.ts";

/** The README's Counter, as a user copies it. */
class ReadmeCounter implements Instance {
  private count?: number;
  async fetch(request: Request, ctx: RequestContext): Promise<Response> {
    this.count ??= (await ctx.storage.get<number>("count")) ?? 0;
    if (request.method === "POST" && ctx.path === "/increment") await ctx.storage.put("count", ++this.count);
    return Response.json({ count: this.count, epoch: ctx.epoch });
  }
}

/** Test hooks the Probe instance reads: the paths it was handed, in order, and a gate for /io. */
const probe = { delivered: [] as string[], io: null as Gate | null, constructed: 0 };

/**
 *   GET  /read      awaits storage.get("x")
 *   GET  /io        awaits probe.io (not storage), then answers
 *   GET  /quick     answers at once
 *   POST /increment count in memory + 1, put NOT awaited (Durable Objects style), answers the count
 *   POST /caught    a put whose failure the instance catches and answers 200 anyway
 */
class Probe implements Instance {
  private count?: number;
  constructor(readonly ctx: InstanceContext) {
    probe.constructed++;
  }
  async fetch(request: Request, ctx: RequestContext): Promise<Response> {
    probe.delivered.push(ctx.path);
    if (ctx.path === "/read") return Response.json({ x: (await ctx.storage.get("x")) ?? null });
    if (ctx.path === "/io") {
      await probe.io?.pass();
      return Response.json({ io: true });
    }
    if (ctx.path === "/quick") return Response.json({ quick: true });
    this.count ??= (await ctx.storage.get<number>("count")) ?? 0;
    if (request.method === "POST" && ctx.path === "/increment") void ctx.storage.put("count", ++this.count);
    if (request.method === "POST" && ctx.path === "/caught") {
      await ctx.storage.put("count", ++this.count).catch(() => {});
      return Response.json({ caught: true });
    }
    return Response.json({ count: this.count });
  }
}

async function concurrentIncrements(w: LocalWorker, id: string, n: number): Promise<number[]> {
  const answers = await Promise.all(
    Array.from({ length: n }, () => w.call(`/counter/${id}/increment`, { method: "POST" })),
  );
  expect(answers.map((a) => a.status)).toEqual(Array(n).fill(200));
  return Promise.all(answers.map(async (a) => ((await a.json()) as { count: number }).count));
}

async function storedCount(w: LocalWorker, id: string): Promise<number> {
  return ((await (await w.call(`/counter/${id}`)).json()) as { count: number }).count;
}

/** Polls the worker's stats until the instance has `n` requests in flight (delivered or waiting). */
async function inflight(w: LocalWorker, id: string, n: number): Promise<void> {
  const deadline = Date.now() + 5000;
  for (;;) {
    const instances = w.worker.stats().instances as { id: string; inflight: number }[];
    if (instances.find((i) => i.id === id)?.inflight === n) return;
    if (Date.now() > deadline) throw new Error(`instance ${id} never had ${n} requests in flight`);
    await new Promise((resolve) => setTimeout(resolve, 5));
  }
}

const range = (n: number) => Array.from({ length: n }, (_, i) => i + 1);

describe("the README Counter under concurrency", () => {
  let t: TestRedis;
  beforeAll(async () => {
    t = await startTestRedis();
  });
  afterAll(() => t?.stop());

  const stores: [string, () => DurabilityStore][] = [
    ["the memory store", () => new LateMemoryStore()],
    ["the Redis store", () => durableStore(t, `gates-${Date.now()}:`)],
  ];
  for (const [name, makeStore] of stores) {
    it(`ends at 200 after 200 concurrent increments of a fresh id on ${name}, each answer its own count`, async () => {
      const store = makeStore();
      const w = await startLocalWorker({ namespaces: { "/counter": ReadmeCounter }, durability: store });
      try {
        const counts = await concurrentIncrements(w, "fresh", 200);
        expect([...counts].sort((a, b) => a - b)).toEqual(range(200));
        expect(await storedCount(w, "fresh")).toBe(200);
        const [raw] = await store.get({ ns: "/counter", id: "fresh" }, ["count"]);
        expect(raw).toBe("200");
      } finally {
        await w.close();
        if (store instanceof RedisDurabilityStore) await store.close();
      }
    });
  }

  it("is exact because of the input gate: with the first read held, the other 19 wait and no second read is made", async () => {
    const store = new HeldMemoryStore();
    store.getGate = freshGate("first-read");
    const w = await startLocalWorker({ namespaces: { "/counter": ReadmeCounter }, durability: store });
    try {
      const pending = concurrentIncrements(w, "held", 20);
      await store.getGate.arrived(1);
      await inflight(w, "held", 20);
      store.getGate.open();
      expect([...(await pending)].sort((a, b) => a - b)).toEqual(range(20));
      expect(store.gets).toBe(1);
      expect(await storedCount(w, "held")).toBe(20);
    } finally {
      await w.close();
    }
  });

  it("loses 19 of 20 with allowConcurrency (the control: the test sees lost updates)", async () => {
    const store = new HeldMemoryStore();
    store.getGate = freshGate("first-read-off");
    const w = await startLocalWorker({
      namespaces: { "/counter": ReadmeCounter },
      durability: store,
      allowConcurrency: true,
    });
    try {
      const pending = concurrentIncrements(w, "held", 20);
      await store.getGate.arrived(20);
      store.getGate.open();
      expect(await pending).toEqual(Array(20).fill(1));
      expect(await storedCount(w, "held")).toBe(1);
    } finally {
      await w.close();
    }
  });
});

describe("the input gate", () => {
  let store: HeldMemoryStore;
  let w: LocalWorker;
  beforeAll(async () => {
    store = new HeldMemoryStore();
    w = await startLocalWorker({ namespaces: { "/counter": Probe }, durability: store, maxQueuedEvents: 2 });
  });
  afterAll(() => w.close());

  it("delivers no request while a storage read is in flight, then delivers them in order", async () => {
    probe.delivered = [];
    store.getGate = freshGate("read");
    const read = w.call("/counter/g1/read");
    await store.getGate.arrived(1);
    const quick = w.call("/counter/g1/quick");
    await inflight(w, "g1", 2);
    expect(probe.delivered).toEqual(["/read"]);
    store.getGate.open();
    expect(await (await read).json()).toEqual({ x: null });
    expect(await (await quick).json()).toEqual({ quick: true });
    expect(probe.delivered).toEqual(["/read", "/quick"]);
    store.getGate = null;
  });

  it("delivers other requests while the instance awaits something that is not storage", async () => {
    probe.delivered = [];
    probe.io = freshGate("io");
    const io = w.call("/counter/g2/io");
    await probe.io.arrived(1);
    const quick = await w.call("/counter/g2/quick");
    expect(await quick.json()).toEqual({ quick: true });
    expect(probe.delivered).toEqual(["/io", "/quick"]);
    probe.io.open();
    expect(await (await io).json()).toEqual({ io: true });
  });

  it("answers 503 instance overloaded (Retry-After, no refusal header) past maxQueuedEvents, and logs it", async () => {
    store.getGate = freshGate("full");
    const read = w.call("/counter/g3/read");
    await store.getGate.arrived(1);
    const queued = [w.call("/counter/g3/quick"), w.call("/counter/g3/quick")];
    await inflight(w, "g3", 3);
    const instances = w.worker.stats().instances as { id: string; queued: number }[];
    expect(instances.find((i) => i.id === "g3")?.queued).toBe(2);
    const refused = await w.call("/counter/g3/quick");
    expect(refused.status).toBe(503);
    expect(refused.headers.get("retry-after")).toBe("1");
    expect(refused.headers.get("pinned-refusal")).toBeNull();
    expect(await refused.json()).toEqual({ detail: "instance overloaded" });
    expect(w.logger.lines).toContain(
      'warn instance queue full: answered 503 instance overloaded (raise maxQueuedEvents, or spread the load over more ids) {"ns":"/counter","id":"g3","maxQueuedEvents":2,"refused":1}',
    );
    store.getGate.open();
    expect((await read).status).toBe(200);
    for (const answer of await Promise.all(queued)) expect(await answer.json()).toEqual({ quick: true });
    store.getGate = null;
  });
});

describe("the output gate", () => {
  /** Whether `answer` settled by the time another instance of the worker answered a request. */
  async function settledAfterARoundTrip(w: LocalWorker, answer: Promise<Response>): Promise<boolean> {
    let settled = false;
    void answer.then(() => (settled = true));
    for (let i = 0; i < 3; i++) await (await w.call(`/counter/elsewhere-${i}/quick`)).text();
    return settled;
  }

  it("holds an answer until the write before it (not awaited) is durable", async () => {
    const store = new HeldMemoryStore();
    const w = await startLocalWorker({ namespaces: { "/counter": Probe }, durability: store });
    try {
      store.putGate = freshGate("put");
      const answer = w.call("/counter/o1/increment", { method: "POST" });
      await store.putGate.arrived(1);
      expect(await settledAfterARoundTrip(w, answer)).toBe(false);
      store.putGate.open();
      expect(await (await answer).json()).toEqual({ count: 1 });
    } finally {
      await w.close();
    }
  });

  it("lets the answer go at once with allowUnconfirmed (the control)", async () => {
    const store = new HeldMemoryStore();
    const w = await startLocalWorker({ namespaces: { "/counter": Probe }, durability: store, allowUnconfirmed: true });
    try {
      store.putGate = freshGate("put-unconfirmed");
      const answer = w.call("/counter/o2/increment", { method: "POST" });
      await store.putGate.arrived(1);
      expect(await (await answer).json()).toEqual({ count: 1 });
      store.putGate.open();
    } finally {
      await w.close();
    }
  });

  for (const path of ["/increment", "/caught"]) {
    it(`answers 500 storage write failed when a write before the answer fails (${path}), and activates afresh from storage`, async () => {
      const store = new HeldMemoryStore();
      const w = await startLocalWorker({ namespaces: { "/counter": Probe }, durability: store });
      try {
        expect(await (await w.call("/counter/f1/increment", { method: "POST" })).json()).toEqual({ count: 1 });
        const constructed = probe.constructed;
        store.failNextPut = new Error("store said no");
        const failed = await w.call(`/counter/f1${path}`, { method: "POST" });
        expect(failed.status).toBe(500);
        expect(await failed.json()).toEqual({ detail: "storage write failed" });
        expect(w.logger.lines).toContain(
          'error storage write failed: instance dropped, it re-activates from storage on its next request {"ns":"/counter","id":"f1","epoch":"10","error":"store said no"}',
        );
        // The memory that counted 2 is gone: the next activation reads 1 from the store.
        expect(await (await w.call("/counter/f1")).json()).toEqual({ count: 1 });
        expect(probe.constructed).toBe(constructed + 1);
      } finally {
        await w.close();
      }
    });
  }
});

/** A WebSocket instance that stores each message (the put not awaited) and echoes it. */
class StoringEcho implements Instance {
  constructor(readonly ctx: InstanceContext) {}
  fetch(request: Request, ctx: RequestContext): Response {
    return ctx.acceptWebSocket(request).response;
  }
  webSocketMessage(socket: PinnedWebSocket, message: string | ArrayBuffer): void {
    void this.ctx.storage.put("last", String(message));
    socket.send(`stored ${String(message)}`);
  }
}

describe("the output gate on WebSocket messages", () => {
  async function echoSocket(w: LocalWorker, id: string): Promise<TestSocket> {
    const path = `/echo/${id}`;
    const headers = {
      "Pinboard-Epoch": "10",
      "Pinboard-Attestation": await attestation({ htm: "GET", htu: path, epoch: "10" }),
    };
    return openSocket(`${w.url}${path}`, { headers });
  }

  it("holds a message sent after a write until the write is durable", async () => {
    const store = new HeldMemoryStore();
    const w = await startLocalWorker({ namespaces: { "/echo": StoringEcho, "/counter": Probe }, durability: store });
    try {
      const socket = await echoSocket(w, "e1");
      store.putGate = freshGate("ws-put");
      let received: string | null = null;
      const frame = socket.next().then((f) => (received = f.data.toString()));
      socket.ws.send("hello");
      await store.putGate.arrived(1);
      for (let i = 0; i < 3; i++) await (await w.call(`/counter/ws-elsewhere-${i}/quick`)).text();
      expect(received).toBeNull();
      store.putGate.open();
      await frame;
      expect(received).toBe("stored hello");
      socket.ws.close();
    } finally {
      await w.close();
    }
  });

  it("drops the message and closes the socket 1011 when the write fails", async () => {
    const store = new HeldMemoryStore();
    const w = await startLocalWorker({ namespaces: { "/echo": StoringEcho }, durability: store });
    try {
      const socket = await echoSocket(w, "e2");
      store.failNextPut = new Error("no room");
      socket.ws.send("lost");
      expect(await socket.closed).toEqual({ code: 1011, reason: "storage write failed" });
      // The echo that followed the failed write never left.
      expect(await Promise.race([socket.next().then(() => "a frame"), socket.closed.then(() => "closed")])).toBe(
        "closed",
      );
    } finally {
      await w.close();
    }
  });
});
