import { connect } from "node:net";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type HostileWorker, startHostileWorker } from "../support/hostile-worker.ts";
import { until } from "../support/local-worker.ts";
import { credential } from "../support/pinboard-app.ts";
import { type PinboardProcess, startPinboardProcess } from "../support/pinboard-process.ts";
import { endColdStart, startTestRedis, type TestRedis } from "../support/redis.ts";
import { startWorkersEntry, type WorkersEntry } from "../support/workerd-entry.ts";

/**
 * Every forward settles, on both entries: odd upgrade headers, a worker that answers 101 to a
 * plain request, closes mid-body or never answers, and clients that leave at each stage. Each
 * request still there gets an answer, and afterwards no inflight slot is held: the per-worker cap
 * (16 here) admits 16 slow requests at once again, and on Node `pinboard_inflight` is empty.
 */

const CAP = 16;
const FORWARD_TIMEOUT_MS = 2000;
const ENV = {
  PINBOARD_MAX_INFLIGHT: String(CAP),
  PINBOARD_FORWARD_TIMEOUT_MS: String(FORWARD_TIMEOUT_MS),
  PINBOARD_LEASE_TTL_MS: "60000",
};
const WS_KEY = ["Sec-WebSocket-Key", "dGhlIHNhbXBsZSBub25jZQ=="] as [string, string];
const WS_VERSION = ["Sec-WebSocket-Version", "13"] as [string, string];

interface Exchange {
  /** The status line's code, null when the connection ended before one. */
  status: number | null;
  head: string;
  body: string;
  /** The body arrived whole: its last chunk, or as many bytes as Content-Length said. */
  complete: boolean;
  /** The connection ended (by either side) before the test's own deadline. */
  ended: boolean;
}

/**
 * Writes one request byte for byte on a new connection and reads until the server closes it.
 * `leaveAfterMs` destroys the client's socket that long after sending (or, with `leaveOnBytes`,
 * once the first bytes of the answer arrived); `partialBody` sends that much of a longer body.
 */
function exchange(
  base: string,
  request: { method?: string; path: string; headers?: Array<[string, string]>; body?: string; declaredLength?: number },
  options: { leaveAfterMs?: number; leaveOnBytes?: boolean; deadlineMs?: number } = {},
): Promise<Exchange> {
  const target = new URL(base);
  return new Promise((resolve) => {
    const socket = connect(Number(target.port), target.hostname);
    const chunks: Buffer[] = [];
    let ended = false;
    const parse = (): Exchange => {
      const text = Buffer.concat(chunks).toString("latin1");
      const split = text.indexOf("\r\n\r\n");
      const head = split < 0 ? text : text.slice(0, split);
      const match = /^HTTP\/1\.[01] (\d{3})/.exec(head);
      const raw = split < 0 ? "" : text.slice(split + 4);
      const length = /\r\ncontent-length: *(\d+)/i.exec(head);
      const body = /\r\ntransfer-encoding: *chunked/i.test(head)
        ? dechunk(raw)
        : { data: raw, complete: length !== null && raw.length === Number(length[1]) };
      return { status: match ? Number(match[1]) : null, head, body: body.data, complete: body.complete, ended };
    };
    const finish = () => {
      clearTimeout(deadline);
      resolve(parse());
    };
    const deadline = setTimeout(() => {
      socket.destroy();
    }, options.deadlineMs ?? 15_000);
    socket.on("connect", () => {
      const body = request.body ?? "";
      const lines = [
        `${request.method ?? "GET"} ${target.pathname.replace(/\/$/, "")}${request.path} HTTP/1.1`,
        `Host: ${target.host}`,
      ];
      for (const [name, value] of request.headers ?? [["Connection", "close"]]) lines.push(`${name}: ${value}`);
      if (body !== "" || request.declaredLength !== undefined)
        lines.push(`Content-Length: ${request.declaredLength ?? Buffer.byteLength(body)}`);
      socket.write(`${lines.join("\r\n")}\r\n\r\n${body}`);
      if (options.leaveAfterMs !== undefined) setTimeout(() => socket.destroy(), options.leaveAfterMs);
    });
    socket.on("data", (d: Buffer) => {
      chunks.push(d);
      if (options.leaveOnBytes) socket.destroy();
      // A whole answer is an ended exchange (some fronts keep the connection despite "close").
      else if (parse().complete) {
        ended = true;
        socket.destroy();
      }
    });
    socket.on("end", () => (ended = true));
    socket.on("error", () => {});
    socket.on("close", () => {
      if (options.leaveAfterMs === undefined && !options.leaveOnBytes) ended ||= chunks.length > 0;
      finish();
    });
  });
}

/** The chunks' data, and whether the last chunk came (a cut body keeps what it had). */
function dechunk(raw: string): { data: string; complete: boolean } {
  let data = "";
  let at = 0;
  for (;;) {
    const eol = raw.indexOf("\r\n", at);
    if (eol < 0) return { data, complete: false };
    const size = parseInt(raw.slice(at, eol), 16);
    if (!(size > 0)) return { data, complete: size === 0 };
    data += raw.slice(eol + 2, eol + 2 + size);
    at = eol + 2 + size + 2;
  }
}

interface Entry {
  url: string;
  /** Whether a body the worker cut short reaches the client visibly cut (not on local workerd). */
  cutBodiesShow: boolean;
  /** Forwards in flight per worker session, where the entry can tell (Node's /metrics). */
  inflight?: () => Promise<number>;
  stop(): Promise<void>;
}

async function nodeEntry(t: TestRedis): Promise<Entry> {
  const pb: PinboardProcess = await startPinboardProcess({ redis: t, env: ENV });
  return {
    url: pb.url,
    cutBodiesShow: true,
    async inflight() {
      const res = await fetch(`${pb.url}/metrics`, {
        headers: { authorization: `Bearer ${await pb.operatorCredential()}` },
      });
      const text = await res.text();
      return text
        .split("\n")
        .filter((line) => line.startsWith("pinboard_inflight{"))
        .reduce((sum, line) => sum + Number(line.slice(line.lastIndexOf(" ") + 1)), 0);
    },
    stop: () => pb.stop(),
  };
}

async function workersEntry(t: TestRedis): Promise<Entry> {
  const entry: WorkersEntry = await startWorkersEntry({ redis: t, env: ENV });
  return { url: entry.url, cutBodiesShow: false, stop: () => entry.stop() };
}

interface Fixture {
  entry: Entry;
  worker: HostileWorker;
}

/** Redis, the entry `start` makes and a hostile worker registered on /hostile, for one describe block. */
function hostileFixture(start: (t: TestRedis) => Promise<Entry>): Fixture {
  const f = {} as Fixture;
  let t: TestRedis | undefined;
  beforeAll(async () => {
    t = await startTestRedis();
    f.entry = await start(t);
    f.worker = await startHostileWorker();
    await f.worker.register(f.entry.url, await credential("pinboard:worker"), "/hostile");
    await endColdStart(t);
  }, 60_000);
  afterAll(async () => {
    await f.worker?.close();
    await f.entry?.stop();
    await t?.stop();
  });
  return f;
}

describe.each([
  ["the Node entry", nodeEntry],
  ["the Workers entry", workersEntry],
])("every forward settles on %s", (_name, start) => {
  const f = hostileFixture(start);

  const seenBy = (id: string) => f.worker.seen.find((s) => s.url.startsWith(`/hostile/${id}`));

  it("takes a bare Upgrade, h2c and a made-up upgrade as plain requests without their Upgrade", async () => {
    const bare = await exchange(f.entry.url, {
      path: "/hostile/bare-1",
      headers: [["Connection", "close"], ["Upgrade", "websocket"], WS_KEY, WS_VERSION],
    });
    expect(bare.status).toBe(200);
    expect(seenBy("bare-1")!.headers.upgrade).toBeUndefined();
    expect(seenBy("bare-1")!.headers.connection ?? "").not.toMatch(/upgrade/i);

    const h2c = await exchange(f.entry.url, {
      path: "/hostile/h2c-1",
      headers: [
        ["Connection", "Upgrade, HTTP2-Settings"],
        ["Connection", "close"],
        ["Upgrade", "h2c"],
        ["HTTP2-Settings", "AAMAAABkAARAAAAAAAIAAAAA"],
      ],
    });
    expect(h2c.status).toBe(200);
    expect(seenBy("h2c-1")!.headers.upgrade).toBeUndefined();
    expect(seenBy("h2c-1")!.headers["http2-settings"]).toBeUndefined();

    const madeUp = await exchange(f.entry.url, {
      method: "POST",
      path: "/hostile/made-up-1",
      headers: [
        ["Connection", "upgrade, close"],
        ["Upgrade", "foo/1"],
      ],
      body: "hello",
    });
    expect(madeUp.status).toBe(200);
    expect(JSON.parse(madeUp.body)).toMatchObject({ method: "POST", bodyBytes: 5 });
    expect(seenBy("made-up-1")!.headers.upgrade).toBeUndefined();
  });

  it("answers 502 bad gateway when a worker answers 101 to a request that asked no upgrade", async () => {
    const requests = [
      exchange(f.entry.url, { path: "/hostile/switch-get" }),
      exchange(f.entry.url, {
        path: "/hostile/switch-bare",
        headers: [["Connection", "close"], ["Upgrade", "websocket"], WS_KEY, WS_VERSION],
      }),
      exchange(f.entry.url, { method: "POST", path: "/hostile/switch-post", body: "x".repeat(100) }),
    ];
    for (const answer of await Promise.all(requests)) {
      expect({ status: answer.status, body: answer.body }).toEqual({ status: 502, body: "bad gateway" });
    }
  });

  it("ends the answer when the worker closes mid-body, and answers 504 when it never answers", async () => {
    const { cutBodiesShow } = f.entry;
    const started = Date.now();
    const [length, chunked, hang] = await Promise.all([
      exchange(f.entry.url, { path: "/hostile/cut-length-1" }),
      exchange(f.entry.url, { path: "/hostile/cut-chunked-1" }),
      exchange(f.entry.url, { path: "/hostile/hang-1" }),
    ]);
    // A cut body is either not relayed at all (502) or relayed and cut short: never complete.
    // A cut body is never passed off as whole: not relayed at all (502), or relayed and cut short
    // (the client sees the connection end before the body does). On the Workers entry the local
    // runtime's front ends a cut stream as if it were whole; what reaches the client is still
    // only what the worker sent.
    for (const cut of [length, chunked]) {
      expect(cut.ended).toBe(true);
      if (cut.status === 502) expect(cut.body).toBe("bad gateway");
      else {
        expect(cut.status).toBe(200);
        expect(cut.body).toBe("0123456789");
        if (cutBodiesShow) expect(cut.complete).toBe(false);
      }
    }
    expect({ status: hang.status, body: hang.body }).toEqual({ status: 504, body: "upstream timeout" });
    // Settled by the forward timeout, not by the client's own deadline.
    expect(Date.now() - started).toBeLessThan(FORWARD_TIMEOUT_MS + 8000);
  });

  it("gives every slot back when clients leave at each stage, and answers those who stay", async () => {
    const leaving = [
      // Right after sending, at several moments: before, during or after the resolve.
      ...[0, 1, 5, 20, 50].map((ms) =>
        exchange(f.entry.url, { path: `/hostile/slow-early-${ms}?ms=500` }, { leaveAfterMs: ms }),
      ),
      // While the worker thinks.
      exchange(f.entry.url, { path: "/hostile/slow-thinking?ms=1500" }, { leaveAfterMs: 300 }),
      // Mid-answer.
      exchange(f.entry.url, { path: "/hostile/drip-1" }, { leaveOnBytes: true }),
      // Mid-upload: 10 of 100000 declared bytes.
      exchange(
        f.entry.url,
        { method: "POST", path: "/hostile/upload-1", body: "0123456789", declaredLength: 100_000 },
        { leaveAfterMs: 200 },
      ),
      // Against a worker that never answers.
      exchange(f.entry.url, { path: "/hostile/hang-2" }, { leaveAfterMs: 200 }),
    ];
    const staying = exchange(f.entry.url, { path: "/hostile/plain-after" });
    await Promise.all(leaving);
    expect((await staying).status).toBe(200);

    // Every slot comes back: the cap admits CAP requests at once to the same worker. The longest
    // legitimate hold is the drip (5 s) where the runtime does not pass the client's leaving on;
    // a leaked slot never comes back, so the generous budget only costs time when it fails.
    let refused: string[] = [];
    const admitted = async () => {
      const answers = await Promise.all(
        Array.from({ length: CAP }, (_, i) => exchange(f.entry.url, { path: `/hostile/slow-cap-${i}?ms=300` })),
      );
      refused = answers.filter((a) => a.status !== 200).map((a) => `${a.status} ${a.body}`);
      return refused.length === 0;
    };
    await until(admitted, 30_000, 200).catch((err: Error) => {
      throw new Error(`${err.message}; the last probe had ${refused.length} of ${CAP} refused: ${refused.join(" | ")}`);
    });
    if (f.entry.inflight) await until(async () => (await f.entry.inflight!()) === 0, 5000, 100);
  });
});

// The Workers entry has no /metrics: the gauge is the Node entry's.
describe("pinboard_inflight on the Node entry", () => {
  const f = hostileFixture(nodeEntry);

  it("counts forwards in flight while they wait for the worker, then none", async () => {
    const slow = [0, 1, 2].map((i) => exchange(f.entry.url, { path: `/hostile/slow-gauge-${i}?ms=1500` }));
    await until(async () => (await f.entry.inflight!()) === 3, 10_000, 50);
    for (const answer of await Promise.all(slow)) expect(answer.status).toBe(200);
    await until(async () => (await f.entry.inflight!()) === 0, 10_000, 50);
  });
});
