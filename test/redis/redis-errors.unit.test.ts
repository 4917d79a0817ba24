import { describe, expect, it } from "vitest";
import { MAX_REDIS_ERROR_CHARS, RedisUnavailableError, redactRedisText } from "../../src/redis/redis-errors.ts";

/** An error as ioredis throws it for a command whose connection closed with retries per request at 0. */
function lostWithItsConnection(): Error {
  const err = new Error(
    'Reached the max retries per request limit (which is 0). Refer to "maxRetriesPerRequest" option for details.',
  );
  err.name = "MaxRetriesPerRequestError";
  return err;
}

describe("redis errors", () => {
  it("a command lost with its connection says so, not that a retry limit was reached", () => {
    expect(new RedisUnavailableError(lostWithItsConnection()).message).toBe(
      "redis unavailable: connection lost before the reply; the command is not sent again",
    );
  });

  it("any other cause keeps its own words", () => {
    expect(new RedisUnavailableError(new Error("connect ECONNREFUSED 127.0.0.1:1")).message).toBe(
      "redis unavailable: connect ECONNREFUSED 127.0.0.1:1",
    );
  });

  it("cuts Upstash's command echo and caps the text", () => {
    expect(redactRedisText('ERR wrong, command was: ["EVALSHA","secret"]')).toBe("ERR wrong");
    const long = "x".repeat(MAX_REDIS_ERROR_CHARS + 5);
    expect(redactRedisText(long)).toBe(`${"x".repeat(MAX_REDIS_ERROR_CHARS)}…`);
  });
});
