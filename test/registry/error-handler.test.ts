import { describe, expect, it } from "vitest";
import { Keys } from "../../src/redis/keys.ts";
import { until } from "../support/local-worker.ts";
import type { PinboardProcess } from "../support/pinboard-process.ts";
import { usePinboardProcess } from "../support/pinboard-process-fixture.ts";
import { endColdStart, type TestRedis } from "../support/redis.ts";
import { putRow } from "../support/rows.ts";
import { type ScriptedWorker, useScriptedWorker, viaUrl } from "../support/scripted-worker.ts";

/**
 * "A handler throw is 500 {"error":"internal error"}" (and DESIGN: logged, never leaked), on the
 * real Node entry. The throws are real: Redis hands back what the code cannot handle — a worker
 * record that is not JSON, or JSON that is not a record — read by an operator route, a worker
 * route, and the resolve script of the data plane.
 */

const keys = new Keys("pinboard:", 16);
let t: TestRedis, pb: PinboardProcess, w: ScriptedWorker;

usePinboardProcess({ PINBOARD_LOG_LEVEL: "error" }, (f) => ({ t, pb } = f));
useScriptedWorker((x) => (w = x));

const INTERNAL = '{"error":"internal error"}';

type LogLine = Record<string, unknown>;
function logLines(): LogLine[] {
  return pb
    .output()
    .split("\n")
    .filter((l) => l.startsWith("{"))
    .map((l) => JSON.parse(l) as LogLine);
}
/** The "unhandled error" line the request to `path` left (waiting for the pipe). */
const loggedFor = (path: string) =>
  until(() => logLines().find((l) => l.msg === "unhandled error" && l.path === path), 10_000);

/** The log line of an unhandled error on `method path`, `error` matching its error text. */
const unhandledErrorLine = (method: string, path: string, error: unknown) => ({
  level: "error",
  time: expect.any(String),
  msg: "unhandled error",
  method,
  path,
  error,
});

/** Sends a request and checks the answer is exactly the contract's 500, with nothing else in it. */
async function expectInternalError(path: string, init: RequestInit = {}): Promise<void> {
  const res = await fetch(`${pb.url}${path}`, init);
  const text = await res.text();
  expect(res.status).toBe(500);
  expect(res.headers.get("content-type")).toBe("application/json");
  expect(text).toBe(INTERNAL);
  expect(JSON.parse(text)).toEqual({ error: "internal error" });
}

describe("a handler throw", () => {
  it("an operator route reading a worker record that is not JSON: 500 internal error, the error logged", async () => {
    const operator = await pb.operatorCredential();
    const auth = { headers: { authorization: `Bearer ${operator}` } };
    const sessionId = await w.register(viaUrl(pb.url), await pb.workerCredential(), { namespaces: ["/err"] });
    const ok = await fetch(`${pb.url}/registry/workers`, auth);
    expect(ok.status).toBe(200);
    expect(((await ok.json()) as { workers: Array<{ sessionId: string }> }).workers.map((x) => x.sessionId)).toEqual([
      sessionId,
    ]);

    const malformed = '{"sessionId": "broken-session", "expiry": 9';
    await t.redis.client.hset(keys.sessions, "broken-session", malformed);
    try {
      for (const path of ["/registry/workers", "/registry/overview", "/registry/stats"]) {
        await expectInternalError(path, auth);
        const line = await loggedFor(path);
        expect(line).toEqual(unhandledErrorLine("GET", path, expect.stringContaining("SyntaxError")));
      }
    } finally {
      await t.redis.client.hdel(keys.sessions, "broken-session");
    }
    // The same routes answer again once the record is gone: the 500 was that record's.
    expect((await fetch(`${pb.url}/registry/workers`, auth)).status).toBe(200);
  });

  it("a worker route reading a record that is JSON but not a record: 500 internal error, the error logged", async () => {
    const token = await pb.workerCredential();
    const sessionId = await w.register(viaUrl(pb.url), token, { namespaces: ["/err2"] });
    const heartbeat = () =>
      fetch(`${pb.url}/registry/heartbeat`, {
        method: "POST",
        headers: { authorization: `Bearer ${token}`, "content-type": "application/json" },
        body: JSON.stringify(w.heartbeatBody(sessionId)),
      });
    const good = await heartbeat();
    expect(good.status).toBe(200);
    expect(await good.json()).toEqual({ expiresInMs: 15000, draining: false });

    const record = (await t.redis.hget(keys.sessions, sessionId))!;
    await t.redis.client.hset(keys.sessions, sessionId, "null");
    try {
      const res = await heartbeat();
      const text = await res.text();
      expect(res.status).toBe(500);
      expect(res.headers.get("content-type")).toBe("application/json");
      expect(text).toBe(INTERNAL);
      const line = await loggedFor("/registry/heartbeat");
      expect(line).toEqual(unhandledErrorLine("POST", "/registry/heartbeat", expect.stringContaining("TypeError")));
    } finally {
      await t.redis.client.hset(keys.sessions, sessionId, record);
    }
    // Logged, never leaked: the worker's secret appears in no log line.
    expect(pb.output()).not.toContain(w.secret);
  });

  it("the data plane, when the resolve script cannot decode the owner's record: 500 internal error, the Redis error logged", async () => {
    const sessionId = await w.register(viaUrl(pb.url), await pb.workerCredential(), { namespaces: ["/err3"] });
    await endColdStart(t);
    const placed = await fetch(`${pb.url}/err3/doc`);
    expect(placed.status).toBe(200);
    expect(await placed.json()).toEqual({ served: "/err3/doc" });

    // The bucket's mirror of the owner's record, as the resolve script reads it, is not JSON.
    const mirror = keys.workers(await keys.bucketOf("doc"));
    const saved = (await t.redis.hget(mirror, sessionId))!;
    await putRow(t, "/err3", "doc", { sessionId, epoch: "1000" });
    await t.redis.client.hset(mirror, sessionId, "{not json");
    try {
      await expectInternalError("/err3/doc");
      const line = await loggedFor("/err3/doc");
      // The error itself (the script's decode failure, as Redis reported it) is in the log, not in the answer.
      expect(line).toEqual(
        unhandledErrorLine("GET", "/err3/doc", expect.stringMatching(/^ReplyError: ERR user_script:\d+: /)),
      );
    } finally {
      await t.redis.client.hset(mirror, sessionId, saved);
    }
    const again = await fetch(`${pb.url}/err3/doc`);
    expect(again.status).toBe(200);
  });
});
