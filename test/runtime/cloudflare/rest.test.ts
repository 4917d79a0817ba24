import { request } from "node:http";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { MAX_BODY_BYTES, type RedisRestServer, startRedisRest, UNAUTHORIZED } from "../../../scripts/redis-rest.ts";
import { defineScript, type LuaScript } from "../../../src/contract/lua-script.ts";
import { RedisOutageGuard } from "../../../src/redis/outage-guard.ts";
import { RedisReplyError, RedisUnavailableError } from "../../../src/redis/redis-errors.ts";
import { REST_MAX_REQUEST_BYTES } from "../../../src/redis/rest/upstash-batch.ts";
import { UpstashRedis } from "../../../src/redis/rest/upstash-redis.ts";
import { freePort } from "../../../src/runtime/node/process/free-port.ts";
import { flushScripts, loadScript, scriptCached, startTestRedis, type TestRedis } from "../../support/redis.ts";
import { bridgeTarget } from "../../support/rest-bridge.ts";

// On a cluster (PINBOARD_TEST_REDIS=cluster) the bridge runs over every node: the keys that one
// MULTI/EXEC, MGET or MSET names share a hash tag, as they must on a cluster.
const TOKEN = "bridge-test-token";
let t: TestRedis, bridge: RedisRestServer, adapter: UpstashRedis;

beforeAll(async () => {
  t = await startTestRedis();
  bridge = await startRedisRest({ ...bridgeTarget(t), token: TOKEN, port: await freePort() });
  adapter = new UpstashRedis({ url: bridge.url, token: TOKEN, timeoutMs: 2000 });
});
afterEach(() => t.flush());
afterAll(async () => {
  await adapter?.close();
  await bridge?.close();
  await t?.stop();
});

interface Sent {
  token?: string | null;
  base64?: boolean;
  method?: string;
}

async function send(path: string, body: unknown, opts: Sent = {}): Promise<{ status: number; json: unknown }> {
  const headers: Record<string, string> = { "Content-Type": "application/json" };
  const token = opts.token === undefined ? TOKEN : opts.token;
  if (token !== null) headers.Authorization = `Bearer ${token}`;
  if (opts.base64) headers["Upstash-Encoding"] = "base64";
  const method = opts.method ?? "POST";
  const res = await fetch(`${bridge.url}${path}`, {
    method,
    headers,
    ...(method === "POST" && { body: typeof body === "string" ? body : JSON.stringify(body) }),
  });
  expect(res.headers.get("content-type")).toBe("application/json");
  return { status: res.status, json: await res.json() };
}

const b64 = (text: string) => Buffer.from(text).toString("base64");

/** A batch whose fourth command fails with WRONGTYPE while the others run, and its per-item replies. */
function wrongTypeBatch(key: (name: string) => string): { commands: unknown[][]; replies: unknown[] } {
  const rows: [command: unknown[], reply: unknown][] = [
    [["SET", key("a"), "1"], { result: "OK" }],
    [["INCR", key("a")], { result: 2 }],
    [["HSET", key("h"), "f", "v"], { result: 1 }],
    [["INCR", key("h")], { error: "WRONGTYPE Operation against a key holding the wrong kind of value" }],
    [["GET", key("a")], { result: "2" }],
  ];
  return { commands: rows.map(([command]) => command), replies: rows.map(([, reply]) => reply) };
}

/** Calls of one command, summed over the primaries. */
async function commandCalls(name: string): Promise<number> {
  let calls = 0;
  for (const node of await t.primaries()) {
    const info = await node.info("commandstats");
    calls += Number(new RegExp(`^cmdstat_${name}:calls=(\\d+)`, "m").exec(info)?.[1] ?? 0);
  }
  return calls;
}

/** A script with the SHA that SCRIPT LOAD gives it, then dropped from the cache. */
async function uncachedScript(name: string, body: string): Promise<LuaScript> {
  const defined = defineScript(name, body, "");
  const sha = await loadScript(t, body);
  await flushScripts(t);
  return { ...defined, sha };
}

describe("redis-rest bridge over raw HTTP", () => {
  it("runs one command from POST / and answers {result}", async () => {
    expect(await send("/", ["SET", "k", "v"])).toEqual({ status: 200, json: { result: "OK" } });
    expect(await send("/", ["get", "k"])).toEqual({ status: 200, json: { result: "v" } });
    expect(await send("/", ["GET", "missing"])).toEqual({ status: 200, json: { result: null } });
    expect(await t.redis.client.get("k")).toBe("v");
  });

  it("passes JSON numbers to Redis as strings and answers integers as numbers", async () => {
    await send("/", ["SET", "n", 42]);
    expect((await send("/", ["INCRBY", "n", 8])).json).toEqual({ result: 50 });
    expect((await send("/", ["GET", "n"])).json).toEqual({ result: "50" });
    await send("/", ["HSET", "h", "f", 1.5]);
    expect((await send("/", ["HGET", "h", "f"])).json).toEqual({ result: "1.5" });
  });

  it("keeps every digit of 64-bit integer replies", async () => {
    const res = await fetch(bridge.url, {
      method: "POST",
      headers: { Authorization: `Bearer ${TOKEN}` },
      body: JSON.stringify(["INCRBY", "big", "9007199254740993"]),
    });
    expect(await res.text()).toBe('{"result":9007199254740993}');
  });

  it("refuses a missing or wrong token with 401, as Upstash does, and runs nothing", async () => {
    const unauthorized = { status: 401, json: { error: UNAUTHORIZED } };
    expect(await send("/", ["SET", "k", "v"], { token: null })).toEqual(unauthorized);
    expect(await send("/", ["SET", "k", "v"], { token: "wrong" })).toEqual(unauthorized);
    expect(await send("/pipeline", [["SET", "k", "v"]], { token: `${TOKEN}x` })).toEqual(unauthorized);
    expect(await send("/multi-exec", [["SET", "k", "v"]], { token: "" })).toEqual(unauthorized);
    const basic = await fetch(bridge.url, {
      method: "POST",
      headers: { Authorization: `Basic ${Buffer.from(`x:${TOKEN}`).toString("base64")}` },
      body: '["SET","k","v"]',
    });
    expect(basic.status).toBe(401);
    expect(await t.redis.client.exists("k")).toBe(0);
  });

  it("answers a Redis error on POST / with 400 {error}", async () => {
    await send("/", ["HSET", "h", "f", "v"]);
    expect(await send("/", ["INCR", "h"])).toEqual({
      status: 400,
      json: { error: "WRONGTYPE Operation against a key holding the wrong kind of value" },
    });
    const unknown = await send("/", ["NOSUCHCOMMAND", "x"]);
    expect(unknown.status).toBe(400);
    expect((unknown.json as { error: string }).error).toMatch(/^ERR unknown command 'NOSUCHCOMMAND'/);
    expect((await send("/", ["SET", "onlykey"])).status).toBe(400);
  });

  it("setToken rotates the token it accepts: the old one gets 401 from then on", async () => {
    bridge.setToken("rotated-token");
    try {
      expect(await send("/", ["SET", "k", "v"])).toEqual({ status: 401, json: { error: UNAUTHORIZED } });
      expect(await send("/", ["SET", "k", "v"], { token: "rotated-token" })).toEqual({
        status: 200,
        json: { result: "OK" },
      });
    } finally {
      bridge.setToken(TOKEN);
    }
    expect(await send("/", ["GET", "k"])).toEqual({ status: 200, json: { result: "v" } });
  });

  it("rejects malformed bodies and connection-state commands with 400", async () => {
    for (const body of ["not json", "{}", "[]", '"GET"', '[["GET","k"]]', '["GET",{"a":1}]', '["GET",null]']) {
      const res = await send("/", body);
      expect(res.status, body).toBe(400);
      expect(typeof (res.json as { error: unknown }).error).toBe("string");
    }
    for (const body of ["[]", '["SET","k","v"]', '[["SET","k","v"],"GET"]']) {
      expect((await send("/pipeline", body)).status, body).toBe(400);
      expect((await send("/multi-exec", body)).status, body).toBe(400);
    }
    for (const cmd of [
      ["MULTI"],
      ["exec"],
      ["SELECT", 1],
      ["SUBSCRIBE", "c"],
      ["BLPOP", "l", 0],
      ["CLIENT", "REPLY", "OFF"],
    ]) {
      expect((await send("/", cmd)).status, cmd.join(" ")).toBe(400);
    }
    expect((await send("/", ["XREAD", "BLOCK", 0, "STREAMS", "s", "$"])).status).toBe(400);
    // The bridge's shared connection is still usable afterwards.
    expect((await send("/", ["PING"])).json).toEqual({ result: "PONG" });
  });

  it("answers 404 for unknown paths and 405 for other methods", async () => {
    expect((await send("/get/k", null)).status).toBe(404);
    expect((await send("/", null, { method: "GET" })).status).toBe(405);
  });

  it("runs /pipeline in order and answers per-item {result}/{error}", async () => {
    const { commands, replies } = wrongTypeBatch((name) => name);
    expect(await send("/pipeline", [...commands, ["GET", "missing"]])).toEqual({
      status: 200,
      json: [...replies, { result: null }],
    });
  });

  it("runs /multi-exec as one MULTI/EXEC", async () => {
    const execs = await commandCalls("exec");
    const { commands, replies } = wrongTypeBatch((name) => `{x}${name}`);
    expect(await send("/multi-exec", commands)).toEqual({ status: 200, json: replies });
    expect(await commandCalls("exec")).toBe(execs + 1);
  });

  it("discards the whole /multi-exec when a command is refused while queueing", async () => {
    await t.redis.client.set("{x}a", "before");
    const res = await send("/multi-exec", [
      ["SET", "{x}a", "after"],
      ["NOSUCHCOMMAND", "x"],
      ["SET", "{x}b", "after"],
    ]);
    expect(res.status).toBe(400);
    expect((res.json as { error: string }).error).toMatch(/^EXECABORT .*unknown command 'NOSUCHCOMMAND'/);
    expect(await t.redis.client.get("{x}a")).toBe("before");
    expect(await t.redis.client.exists("{x}b")).toBe(0);
  });

  it("keeps /multi-exec atomic against a concurrent writer on another connection", async () => {
    let writing = true;
    const writer = (async () => {
      while (writing) await t.redis.client.set("c", "100");
    })();
    try {
      const runs = await Promise.all(
        Array.from({ length: 40 }, () =>
          send("/multi-exec", [
            ["SET", "c", "0"],
            ["INCR", "c"],
            ["INCR", "c"],
            ["GET", "c"],
          ]),
        ),
      );
      for (const run of runs) {
        expect(run.json).toEqual([{ result: "OK" }, { result: 1 }, { result: 2 }, { result: "2" }]);
      }
    } finally {
      writing = false;
      await writer;
    }
  });

  it("answers 502 on POST / and per-item errors in /pipeline when Redis is down", async () => {
    const lonely = await startTestRedis();
    const down = await startRedisRest({ ...bridgeTarget(lonely), token: TOKEN });
    try {
      await lonely.stop();
      const post = (path: string, body: unknown) =>
        fetch(`${down.url}${path}`, {
          method: "POST",
          headers: { Authorization: `Bearer ${TOKEN}` },
          body: JSON.stringify(body),
        });
      const single = await post("/", ["GET", "k"]);
      expect(single.status).toBe(502);
      expect(typeof ((await single.json()) as { error: unknown }).error).toBe("string");
      const many = await post("/pipeline", [
        ["GET", "k"],
        ["GET", "j"],
      ]);
      expect(many.status).toBe(200);
      const items = (await many.json()) as { error?: string }[];
      expect(items.map((item) => typeof item.error)).toEqual(["string", "string"]);
    } finally {
      await down.close();
    }
  });

  describe("Upstash-Encoding: base64", () => {
    it('encodes every string, "OK" included', async () => {
      expect((await send("/", ["SET", "k", "hello"], { base64: true })).json).toEqual({ result: b64("OK") });
      expect((await send("/", ["GET", "k"], { base64: true })).json).toEqual({ result: b64("hello") });
      expect((await send("/", ["PING"], { base64: true })).json).toEqual({ result: b64("PONG") });
      expect((await send("/", ["STRLEN", "k"], { base64: true })).json).toEqual({ result: 5 });
      expect((await send("/", ["GET", "missing"], { base64: true })).json).toEqual({ result: null });
      expect((await send("/", ["GET", "k"])).json).toEqual({ result: "hello" });
    });

    it("encodes strings in nested arrays and keeps integers and nils", async () => {
      const script = "return {'a', {'OK', 7, false, {'deep'}}, redis.call('SET', KEYS[1], 'x'), ''}";
      const res = await send("/", ["EVAL", script, 1, "k"], { base64: true });
      expect(res.json).toEqual({
        result: [b64("a"), [b64("OK"), 7, null, [b64("deep")]], b64("OK"), ""],
      });
    });

    it("round-trips bytes that are not UTF-8", async () => {
      const bytes = Buffer.from([0xff, 0x00, 0xfe, 0x80, 0x41]);
      await t.redis.client.set("{b}bin", bytes);
      const res = await send("/", ["GET", "{b}bin"], { base64: true });
      expect(Buffer.from((res.json as { result: string }).result, "base64")).toEqual(bytes);
      const listed = await send("/pipeline", [["MGET", "{b}bin", "{b}missing"]], { base64: true });
      expect(listed.json).toEqual([{ result: [bytes.toString("base64"), null] }]);
    });

    it("never encodes error messages", async () => {
      await send("/", ["SET", "s", "text"]);
      const message = "ERR value is not an integer or out of range";
      expect(await send("/", ["INCR", "s"], { base64: true })).toEqual({ status: 400, json: { error: message } });
      expect(
        (
          await send(
            "/pipeline",
            [
              ["INCR", "s"],
              ["GET", "s"],
            ],
            { base64: true },
          )
        ).json,
      ).toEqual([{ error: message }, { result: b64("text") }]);
      expect(
        (
          await send(
            "/multi-exec",
            [
              ["INCR", "s"],
              ["SET", "s", "v"],
            ],
            { base64: true },
          )
        ).json,
      ).toEqual([{ error: message }, { result: b64("OK") }]);
      expect((await send("/", ["GET", "s"], { token: "wrong", base64: true })).json).toEqual({ error: UNAUTHORIZED });
    });
  });

  describe("body size", () => {
    function postRaw(write: (req: ReturnType<typeof request>) => void, headers: Record<string, string | number>) {
      return new Promise<{ status: number; body: string }>((resolve, reject) => {
        const url = new URL(bridge.url);
        const req = request({
          host: url.hostname,
          port: url.port,
          method: "POST",
          path: "/",
          headers: { Authorization: `Bearer ${TOKEN}`, ...headers },
        });
        req.on("response", (res) => {
          let body = "";
          res.setEncoding("utf8");
          res.on("data", (chunk: string) => (body += chunk));
          res.on("end", () => resolve({ status: res.statusCode ?? 0, body }));
        });
        // The bridge closes the connection while the body is still being sent.
        req.on("error", (err: NodeJS.ErrnoException) => {
          if (err.code !== "EPIPE" && err.code !== "ECONNRESET") reject(err);
        });
        write(req);
      });
    }

    it("refuses a declared body over 1,000,000 bytes (Upstash's free-tier max request size) with 413 before reading it", async () => {
      expect(MAX_BODY_BYTES).toBe(1_000_000);
      const res = await postRaw((req) => req.write('["SET","k","'), { "Content-Length": MAX_BODY_BYTES + 1 });
      expect(res).toEqual({ status: 413, body: JSON.stringify({ error: "ERR max request size exceeded" }) });
    });

    it("refuses a streamed body once it passes the limit", async () => {
      const chunk = Buffer.alloc(1024 * 1024, 0x61);
      const res = await postRaw(
        (req) => {
          let sent = 0;
          const pump = () => {
            while (sent <= MAX_BODY_BYTES + chunk.length && !req.destroyed) {
              sent += chunk.length;
              if (!req.write(chunk)) return void req.once("drain", pump);
            }
          };
          pump();
        },
        { "Transfer-Encoding": "chunked" },
      );
      expect(res.status).toBe(413);
      expect(await t.keys()).toEqual([]);
    });

    it("accepts a body just under the limit", async () => {
      const value = "x".repeat(MAX_BODY_BYTES - 100);
      expect((await send("/", ["SET", "big", value])).json).toEqual({ result: "OK" });
      expect(await t.redis.client.strlen("big")).toBe(value.length);
    });

    it("takes another limit as maxBodyBytes", async () => {
      const small = await startRedisRest({ ...bridgeTarget(t), token: TOKEN, maxBodyBytes: 1000 });
      try {
        const post = (value: string) =>
          fetch(small.url, {
            method: "POST",
            headers: { Authorization: `Bearer ${TOKEN}` },
            body: JSON.stringify(["SET", "k", value]),
          });
        const over = await post("x".repeat(1000));
        expect({ status: over.status, body: await over.json() }).toEqual({
          status: 413,
          body: { error: "ERR max request size exceeded" },
        });
        const under = await post("x".repeat(900));
        expect({ status: under.status, body: await under.json() }).toEqual({ status: 200, body: { result: "OK" } });
      } finally {
        await small.close();
      }
    });
  });
});

describe("UpstashRedis adapter through the bridge", () => {
  it("runs a script by EVAL on NOSCRIPT, then by EVALSHA", async () => {
    const script = await uncachedScript("redis-rest-test-echo", "return {KEYS[1], ARGV[1], ARGV[2]}");
    const [evals, evalshas] = [await commandCalls("eval"), await commandCalls("evalsha")];
    expect(await adapter.run(script, ["k"], ["v", 7])).toEqual(["k", "v", "7"]);
    expect(await commandCalls("eval")).toBe(evals + 1);
    expect(await commandCalls("evalsha")).toBe(evalshas + 1);
    expect(await scriptCached(t, script.sha)).toBe(true);

    // Another key of the same slot (so, on a cluster, the same node and script cache).
    expect(await adapter.run(script, ["{k}2"], ["w", "123"])).toEqual(["{k}2", "w", "123"]);
    expect(await commandCalls("eval")).toBe(evals + 1);
    expect(await commandCalls("evalsha")).toBe(evalshas + 2);
  });

  it("falls back to EVAL for a script larger than 64 KiB", async () => {
    const padding = `-- ${"p".repeat(96 * 1024)}\n`;
    const script = await uncachedScript("redis-rest-test-large", `${padding}return ARGV[1]`);
    expect(await adapter.run(script, [], ["big"])).toBe("big");
  });

  it("surfaces script errors", async () => {
    const script = await uncachedScript("redis-rest-test-error", "return redis.error_reply('boom')");
    await expect(adapter.run(script, [], [])).rejects.toThrow(/boom/);
  });

  it("sends runMany as one auto-pipelined request", async () => {
    const body = "return {KEYS[1], redis.call('INCRBY', KEYS[1], ARGV[1])}";
    const defined = defineScript("redis-rest-test-incr", body, "");
    const script = { ...defined, sha: await loadScript(t, body) };
    const requests: { url: string; body: unknown }[] = [];
    const realFetch = globalThis.fetch;
    globalThis.fetch = (input, init) => {
      requests.push({ url: String(input), body: JSON.parse(String(init?.body)) });
      return realFetch(input, init);
    };
    try {
      const replies = await adapter.runMany([
        { script, keys: ["{a}n"], args: [1] },
        { script, keys: ["{b}n"], args: [2] },
        { script, keys: ["{c}n"], args: ["3"] },
      ]);
      expect(replies).toEqual([
        ["{a}n", 1],
        ["{b}n", 2],
        ["{c}n", 3],
      ]);
    } finally {
      globalThis.fetch = realFetch;
    }
    expect(requests).toHaveLength(1);
    expect(requests[0]!.url).toBe(`${bridge.url}/pipeline`);
    expect(requests[0]!.body).toEqual([
      ["evalsha", script.sha, 1, "{a}n", "1"],
      ["evalsha", script.sha, 1, "{b}n", "2"],
      ["evalsha", script.sha, 1, "{c}n", "3"],
    ]);
  });

  it("runMany falls back to EVAL for uncached scripts", async () => {
    const script = await uncachedScript("redis-rest-test-many", "return ARGV[1]");
    const calls = ["x", "y", "z"].map((arg) => ({ script, keys: [], args: [arg] }));
    expect(await adapter.runMany(calls)).toEqual(["x", "y", "z"]);
  });

  it("returns nested arrays and nils from Lua as Redis does over RESP2", async () => {
    const nested = await uncachedScript(
      "redis-rest-test-nested",
      "return {1, 'x', {2, {'deep', false}}, false, '123', 'OK', 3.9}",
    );
    expect(await adapter.run(nested, [], [])).toEqual([1, "x", [2, ["deep", null]], null, "123", "OK", 3]);

    const stops = await uncachedScript("redis-rest-test-nil", "return {1, nil, 3}");
    expect(await adapter.run(stops, [], [])).toEqual([1]);

    await t.redis.client.mset("{m}a", "1", "{m}c", "3");
    const mget = await uncachedScript("redis-rest-test-mget", "return redis.call('MGET', KEYS[1], KEYS[2], KEYS[3])");
    expect(await adapter.run(mget, ["{m}a", "{m}b", "{m}c"], [])).toEqual(["1", null, "3"]);

    expect(await adapter.run(await uncachedScript("redis-rest-test-false", "return false"), [], [])).toBeNull();
  });

  it("reads strings that look like numbers or JSON as strings", async () => {
    await t.redis.client.mset("{s}n", "123", "{s}j", '{"a":1}', "{s}t", "true", "{s}e", "");
    expect(await adapter.get("{s}n")).toBe("123");
    expect(await adapter.get("{s}j")).toBe('{"a":1}');
    expect(await adapter.get("{s}t")).toBe("true");
    expect(await adapter.get("{s}e")).toBe("");
    expect(await adapter.get("missing")).toBeNull();
  });

  it("reads hash fields with hget and hgetall", async () => {
    await t.redis.client.hset("h", "a", "123", "b", "x y", "c", "null", "__proto__", "p");
    expect(await adapter.hget("h", "a")).toBe("123");
    expect(await adapter.hget("h", "nope")).toBeNull();
    expect(await adapter.hget("missing", "a")).toBeNull();

    const all = await adapter.hgetall("h");
    expect(Object.keys(all).sort()).toEqual(["__proto__", "a", "b", "c"]);
    expect(all.a).toBe("123");
    expect(all.b).toBe("x y");
    expect(all.c).toBe("null");
    expect(Object.getOwnPropertyDescriptor(all, "__proto__")?.value).toBe("p");
    expect(Object.getPrototypeOf(all)).toBe(Object.prototype);
    expect(await adapter.hgetall("missing")).toEqual({});
  });

  it("reads Redis TIME in milliseconds", async () => {
    const ms = await adapter.timeMs();
    expect(Number.isInteger(ms)).toBe(true);
    expect(Math.abs(ms - Date.now())).toBeLessThan(5000);
  });
});

/** Every POST the adapter sends while `work` runs: its path and body size. */
async function postsDuring(work: () => Promise<unknown>): Promise<Array<{ url: string; bytes: number }>> {
  const posts: Array<{ url: string; bytes: number }> = [];
  const realFetch = globalThis.fetch;
  globalThis.fetch = (input, init) => {
    posts.push({ url: String(input), bytes: Buffer.byteLength(String(init?.body ?? "")) });
    return realFetch(input, init);
  };
  try {
    await work();
  } finally {
    globalThis.fetch = realFetch;
  }
  return posts;
}

describe("UpstashRedis adapter: request budget and failures", () => {
  const lengthScript = async () => {
    const body = "return string.len(ARGV[1])";
    return { ...defineScriptOnce("redis-rest-test-len", body), sha: await loadScript(t, body) };
  };

  it("splits commands of one turn into POSTs under the request budget, past the bridge's 1,000,000-byte limit in all", async () => {
    const script = await lengthScript();
    const arg = "s".repeat(60_000);
    const calls = Array.from({ length: 40 }, (_, i) => ({ script, keys: [`{n${i}}k`], args: [arg] }));
    let replies: unknown;
    const posts = await postsDuring(async () => (replies = await adapter.runMany(calls)));
    expect(replies).toEqual(Array(40).fill(60_000));
    // 40 × 60 KB = 2.4 MB: three POSTs, each under the 900,000-byte budget (and so under the bridge's limit).
    expect(posts.length).toBe(3);
    for (const post of posts) {
      expect(post.url).toBe(`${bridge.url}/pipeline`);
      expect(post.bytes).toBeLessThanOrEqual(REST_MAX_REQUEST_BYTES);
    }
  });

  it("answers a command over the endpoint's size limit as unavailability, naming no argument", async () => {
    const secret = `sekrit-${"z".repeat(MAX_BODY_BYTES)}`;
    const err = await adapter.set("{big}k", secret).then(
      () => null,
      (e: unknown) => e as Error,
    );
    expect(err).toBeInstanceOf(RedisUnavailableError);
    expect(err!.message).toBe("redis unavailable: ERR max request size exceeded");
    expect(await t.redis.client.exists("{big}k")).toBe(0);
  });

  it("answers a wrong token (WRONGPASS) as unavailability: the message holds neither the arguments nor `command was`", async () => {
    const script = await lengthScript();
    bridge.setToken("rotated-token");
    try {
      const err = await adapter.run(script, ["k"], ['{"secret":"worker-secret-0123456789","account":"acme"}']).then(
        () => null,
        (e: unknown) => e as Error,
      );
      expect(err).toBeInstanceOf(RedisUnavailableError);
      expect(err!.message).toBe(`redis unavailable: ${UNAUTHORIZED}`);
      const guarded = await new RedisOutageGuard(adapter).hget("h", "f").then(
        () => null,
        (e: unknown) => e as Error,
      );
      expect(guarded).toBeInstanceOf(RedisUnavailableError);
      expect(`${guarded!.message} ${guarded!.stack}`).not.toMatch(/command was|worker-secret|acme/);
    } finally {
      bridge.setToken(TOKEN);
    }
  });

  it("keeps a reply error a reply error, with Redis' text only", async () => {
    await t.redis.client.set("{w}s", "text");
    const script = await uncachedScript("redis-rest-test-wrongtype", "return redis.call('HGET', KEYS[1], ARGV[1])");
    const err = await adapter.run(script, ["{w}s"], ["field-with-sekrit"]).then(
      () => null,
      (e: unknown) => e as Error,
    );
    expect(err).toBeInstanceOf(RedisReplyError);
    expect(err!.name).toBe("ReplyError");
    expect(err!.message).toMatch(/WRONGTYPE/);
    expect(err!.message).not.toMatch(/sekrit|command was/);
  });

  it("answers per-item failures of a bridge whose Redis is down as unavailability", async () => {
    const lonely = await startTestRedis();
    const down = await startRedisRest({ ...bridgeTarget(lonely), token: TOKEN });
    const orphan = new UpstashRedis({ url: down.url, token: TOKEN, timeoutMs: 2000 });
    try {
      await lonely.stop();
      const err = await orphan.get("k").then(
        () => null,
        (e: unknown) => e as Error,
      );
      expect(err).toBeInstanceOf(RedisUnavailableError);
    } finally {
      await down.close();
    }
  });
});

const defined = new Map<string, LuaScript>();
/** defineScript, once per name in this file (the registry refuses a second definition). */
function defineScriptOnce(name: string, body: string): LuaScript {
  let script = defined.get(name);
  if (!script) defined.set(name, (script = defineScript(name, body, "")));
  return script;
}
