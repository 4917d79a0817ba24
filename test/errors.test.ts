import { describe, expect, it } from "vitest";
import { errorAnswer } from "../src/errors.ts";
import { createLogger } from "../src/log.ts";
import { RedisUnavailableError } from "../src/redis/guarded.ts";

/**
 * The one error handler's log lines (fast tier): whatever reaches it, a Redis client's command
 * echo (`, command was: …`, where the worker's secret and account travel) is never logged.
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
