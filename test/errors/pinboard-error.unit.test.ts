import { describe, expect, it } from "vitest";
import {
  answerOf,
  answerResponse,
  badRequest,
  errorAnswer,
  forbidden,
  notFound,
  notServing,
  PinboardError,
  textAnswer,
  unauthorized,
  unknownSession,
} from "../../src/errors/pinboard-error.ts";
import { createLogger } from "../../src/log/logger.ts";
import { RedisUnavailableError } from "../../src/redis/redis-errors.ts";

/**
 * Pinboard's one error type and its answers: the protocol's status, body and headers of each error,
 * Retry-After = max(1, ceil(remaining / 1000)) on a refusal, and the one error handler's log lines,
 * which never hold a Redis client's command echo (`, command was: …`, where the worker's secret
 * and account travel).
 */

const ECHO = ', command was: [["evalsha","abc",1,"k","{\\"secret\\":\\"s3cr3t-value\\",\\"account\\":\\"acme\\"}"]]';

function handled(err: unknown): { status: number; body: string | null; lines: string[] } {
  const lines: string[] = [];
  const sink = { log: (line: string) => void lines.push(line), error: (line: string) => void lines.push(line) };
  const answer = errorAnswer(err, { method: "POST", path: "/registry/register" }, createLogger("debug", sink));
  return { status: answer.status, body: answer.body, lines };
}

describe("errorAnswer's log line", () => {
  it("a client error that got here unwrapped: 500, its stack logged without the command echo", () => {
    const err = new Error(`ERR something${ECHO}`);
    err.name = "UpstashError";
    const { status, body, lines } = handled(err);
    expect({ status, body }).toEqual({ status: 500, body: '{"error":"internal error"}' });
    expect(lines).toHaveLength(1);
    const line = JSON.parse(lines[0]!) as { msg: string; error: string };
    expect(line.msg).toBe("unhandled error");
    expect(line.error.startsWith("UpstashError: ERR something\n    at ")).toBe(true);
    expect(lines[0]).not.toMatch(/command was|s3cr3t|acme/);
  });

  it("a thrown string: 500, logged without the echo", () => {
    const { lines } = handled(`ERR raw${ECHO}`);
    expect(JSON.parse(lines[0]!)).toMatchObject({ msg: "unhandled error", error: "ERR raw" });
  });

  it("Redis unavailable: 503 redis unavailable, retry with Retry-After: 1, logged without the echo", () => {
    const { status, body, lines } = handled(
      new RedisUnavailableError(new Error(`WRONGPASS invalid or missing auth token${ECHO}`)),
    );
    expect({ status, body }).toEqual({ status: 503, body: '{"error":"redis unavailable, retry"}' });
    expect(JSON.parse(lines[0]!)).toMatchObject({
      level: "warn",
      msg: "redis unavailable",
      error: "redis unavailable: WRONGPASS invalid or missing auth token",
    });
  });
});

describe("PinboardError.refusal: Retry-After = max(1, ceil(remaining / 1000))", () => {
  it.each([
    [0, "1"],
    [-1, "1"],
    [-60_000, "1"],
    [1, "1"],
    [999, "1"],
    [1000, "1"],
    [1001, "2"],
    [1500, "2"],
    [2000, "2"],
    [2001, "3"],
    [2400, "3"],
    [14_000.5, "15"],
    [14_001, "15"],
    [15_000, "15"],
  ])("%d ms left: Retry-After %s", (remainingMs, seconds) => {
    const err = PinboardError.refusal("registry cold start, retry", remainingMs);
    expect({ status: err.status, body: err.body, headers: err.headers }).toEqual({
      status: 503,
      body: { error: "registry cold start, retry" },
      headers: { "Retry-After": seconds },
    });
  });

  it("defaults to 1 second", () => {
    expect(PinboardError.refusal("x").headers).toEqual({ "Retry-After": "1" });
  });
});

describe("the protocol's errors", () => {
  const answer = (err: PinboardError) => answerOf(err);
  const json = (status: number, body: unknown, headers: Record<string, string> = {}) => ({
    status,
    headers: { ...headers, "content-type": "application/json" },
    body: JSON.stringify(body),
  });

  it("render as JSON with their status and exact body", () => {
    expect(answer(badRequest("missing Host header"))).toEqual(json(400, { error: "missing Host header" }));
    expect(answer(unauthorized())).toEqual(json(401, { error: "unauthorized" }));
    expect(answer(forbidden())).toEqual(json(403, { error: "forbidden" }));
    expect(answer(forbidden("namespace not allowed: /x"))).toEqual(json(403, { error: "namespace not allowed: /x" }));
    expect(answer(notFound())).toEqual(json(404, { error: "not found" }));
    expect(answer(notFound("unknown namespace"))).toEqual(json(404, { error: "unknown namespace" }));
    expect(answer(unknownSession())).toEqual(json(409, { error: "unknown session", reregister: true }));
    expect(answer(notServing())).toEqual(json(503, { error: "not the serving fleet" }, { "retry-after": "1" }));
    expect(answer(PinboardError.of(508, "subrequest depth exceeded"))).toEqual(
      json(508, { error: "subrequest depth exceeded" }),
    );
  });

  it("a text body renders as text/plain; header names are lower-cased", () => {
    expect(answer(new PinboardError(400, "invalid id", { "X-Why": "id" }))).toEqual({
      status: 400,
      headers: { "x-why": "id", "content-type": "text/plain; charset=utf-8" },
      body: "invalid id",
    });
  });

  it("takes the error string as its message, or the status when the body has none", () => {
    expect(unknownSession().message).toBe("unknown session");
    expect(new PinboardError(400, "invalid id").message).toBe("invalid id");
    expect(new PinboardError(502, {}).message).toBe("502");
    expect(unknownSession().name).toBe("PinboardError");
  });
});

describe("textAnswer and answerResponse", () => {
  it("a text answer is text/plain; a null body has no content type", async () => {
    expect(textAnswer(502, "bad gateway")).toEqual({
      status: 502,
      headers: { "content-type": "text/plain; charset=utf-8" },
      body: "bad gateway",
    });
    expect(textAnswer(502, null)).toEqual({ status: 502, headers: {}, body: null });
    const res = answerResponse(answerOf(PinboardError.refusal("redis unavailable, retry", 2500)));
    expect(res.status).toBe(503);
    expect(Object.fromEntries(res.headers)).toEqual({ "content-type": "application/json", "retry-after": "3" });
    expect(await res.text()).toBe('{"error":"redis unavailable, retry"}');
  });
});
