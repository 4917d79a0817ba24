import { describe, expect, it } from "vitest";
import {
  MAX_REDIS_ERROR_CHARS,
  RedisReplyError,
  RedisUnavailableError,
  redactRedisText,
  redactStack,
} from "../../../src/redis/redis-errors.ts";
import { itemFailure, requestFailure } from "../../../src/redis/rest/upstash-errors.ts";

/**
 * How the REST adapter reads a failure (fast tier, no Redis): what Upstash itself refuses is
 * unavailability (503), what Redis refused about a command is a reply error; and no message keeps
 * Upstash's `, command was: …` echo of the request, which holds worker secrets and accounts.
 */

const ECHO = ', command was: [["evalsha","abc",1,"k","{\\"secret\\":\\"s3cr3t-value\\",\\"account\\":\\"acme\\"}"]]';

describe("redactRedisText", () => {
  it("cuts Upstash's command echo and everything after it", () => {
    expect(redactRedisText(`WRONGPASS invalid or missing auth token${ECHO}`)).toBe(
      "WRONGPASS invalid or missing auth token",
    );
  });

  it("caps a long message", () => {
    const text = redactRedisText("E".repeat(5000));
    expect(text).toBe(`${"E".repeat(MAX_REDIS_ERROR_CHARS)}…`);
  });

  it("keeps a stack's frames, without the echo", () => {
    const stack = `UpstashError: ERR boom${ECHO}\n    at HttpClient.request (chunk.mjs:205:13)`;
    expect(redactStack(stack)).toBe("UpstashError: ERR boom\n    at HttpClient.request (chunk.mjs:205:13)");
  });
});

describe("requestFailure: a failed POST /pipeline", () => {
  it("is unavailability, whatever the endpoint said, with the echo cut", () => {
    for (const said of [
      "WRONGPASS invalid or missing auth token",
      "ERR max request size exceeded",
      "ERR internal",
      "Unable to parse response body: <html>",
    ]) {
      const err = requestFailure(new Error(`${said}${ECHO}`));
      expect(err).toBeInstanceOf(RedisUnavailableError);
      expect(err.message).toBe(`redis unavailable: ${said}`);
    }
    expect(requestFailure(new TypeError("fetch failed")).message).toBe("redis unavailable: fetch failed");
  });
});

describe("itemFailure: one failed item of a pipeline", () => {
  it("is unavailability for the endpoint's own refusals and for errors Redis did not write", () => {
    for (const text of [
      "WRONGPASS invalid or missing auth token",
      "NOAUTH Authentication required.",
      "NOPERM this user has no permissions to run the 'evalsha' command or its subcommand",
      "ERR max request size exceeded",
      "ERR max daily request limit exceeded. Limit: 10000, Usage: 10000.",
      "ERR max concurrent connections exceeded",
      "Connection is closed.",
      "connect ECONNREFUSED 127.0.0.1:6379",
    ]) {
      expect(itemFailure(text), text).toBeInstanceOf(RedisUnavailableError);
    }
  });

  it("is a reply error for what Redis refused about the command", () => {
    for (const text of [
      "WRONGTYPE Operation against a key holding the wrong kind of value",
      "NOSCRIPT No matching script. Please use EVAL.",
      "ERR user_script:12: Script attempted to access nonexistent global variable 'x' script: abc, on @user_script:12.",
      "BUSY Redis is busy running a script.",
    ]) {
      const err = itemFailure(text);
      expect(err, text).toBeInstanceOf(RedisReplyError);
      expect(err.name).toBe("ReplyError");
      expect(err.message).toBe(text);
    }
  });
});
