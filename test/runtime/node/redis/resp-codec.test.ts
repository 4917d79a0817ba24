import fc from "fast-check";
import { describe, expect, it } from "vitest";
import {
  encodeCommand,
  ReplyError,
  RespParser,
  type RespValue,
} from "../../../../src/runtime/node/redis/resp-codec.ts";

/** A reply as Redis writes it (the test's own encoder, independent of the parser). */
function wire(value: RespValue): string {
  if (value === null) return "$-1\r\n";
  if (value instanceof ReplyError) return `-${value.message}\r\n`;
  if (typeof value === "number") return `:${value}\r\n`;
  if (typeof value === "string") return `$${Buffer.byteLength(value)}\r\n${value}\r\n`;
  return `*${value.length}\r\n${value.map(wire).join("")}`;
}

/** Every reply `bytes` holds, fed to a parser in the chunks `cuts` says. */
function parseInChunks(bytes: Buffer, cuts: number[]): RespValue[] {
  const out: RespValue[] = [];
  const parser = new RespParser((reply) => out.push(reply));
  let from = 0;
  for (const cut of [...new Set(cuts.map((c) => c % (bytes.length + 1)))].sort((a, b) => a - b)) {
    parser.push(bytes.subarray(from, cut));
    from = cut;
  }
  parser.push(bytes.subarray(from));
  return out;
}

const reply: fc.Arbitrary<RespValue> = fc.letrec<{ value: RespValue }>((tie) => ({
  value: fc.oneof(
    { depthSize: "small" },
    fc.string({ unit: "binary" }),
    fc.integer(),
    fc.constant(null),
    fc.stringMatching(/^[A-Z]+ [a-z ]{0,20}$/).map((m) => new ReplyError(m)),
    fc.array(tie("value"), { maxLength: 5 }),
  ),
})).value;

describe("RESP2 codec", () => {
  it("encodes a command as an array of bulk strings, numbers as their decimal text", () => {
    expect(encodeCommand(["EVALSHA", "ab", 1, "k", -2])).toBe(
      "*5\r\n$7\r\nEVALSHA\r\n$2\r\nab\r\n$1\r\n1\r\n$1\r\nk\r\n$2\r\n-2\r\n",
    );
    expect(encodeCommand(["SET", "é", "🙂"])).toBe("*3\r\n$3\r\nSET\r\n$2\r\né\r\n$4\r\n🙂\r\n");
    expect(encodeCommand(["GET", ""])).toBe("*2\r\n$3\r\nGET\r\n$0\r\n\r\n");
  });

  it("decodes any sequence of replies the same, however the bytes are split", () => {
    fc.assert(
      fc.property(
        fc.array(reply, { minLength: 1, maxLength: 6 }),
        fc.array(fc.nat(), { maxLength: 12 }),
        (replies, cuts) => {
          const bytes = Buffer.from(replies.map(wire).join(""), "utf8");
          const parsed = parseInChunks(bytes, cuts);
          expect(parsed).toEqual(replies);
          // ReplyError is what GuardedRedis recognises; equality above does not compare classes.
          const errors = (values: RespValue[]): unknown[] =>
            values.flatMap((v) => (Array.isArray(v) ? errors(v) : v instanceof ReplyError ? [v] : []));
          for (const e of errors(parsed)) expect((e as Error).name).toBe("ReplyError");
        },
      ),
      { numRuns: 500 },
    );
  });

  it("decodes status, nil array and negative integers as ioredis hands them over", () => {
    const parsed = parseInChunks(Buffer.from("+OK\r\n*-1\r\n:-42\r\n*0\r\n$0\r\n\r\n"), []);
    expect(parsed).toEqual(["OK", null, -42, [], ""]);
  });

  it("refuses bytes that are not RESP2", () => {
    const parser = new RespParser(() => {});
    expect(() => parser.push(Buffer.from("HTTP/1.1 200 OK\r\n"))).toThrow(/not a RESP2 reply/);
    expect(() => new RespParser(() => {}).push(Buffer.from("$1x\r\n"))).toThrow(/not a RESP2 integer/);
  });
});
