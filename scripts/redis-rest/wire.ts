import type { IncomingMessage } from "node:http";

/** One Redis command as the bridge sends it: an upper-case name and string arguments. */
export interface RedisCommand {
  name: string;
  args: string[];
}

/** A request the bridge refuses before Redis sees it (HTTP 400, `{"error"}`). */
export class BadRequest extends Error {}

/**
 * Commands that would change the state of the shared connection (transactions, pub/sub,
 * SELECT, CLIENT REPLY, …) or block it for every other caller. `/multi-exec` is the way to
 * run a transaction.
 */
const REFUSED = new Set([
  "AUTH",
  "BLMOVE",
  "BLMPOP",
  "BLPOP",
  "BRPOP",
  "BRPOPLPUSH",
  "BZMPOP",
  "BZPOPMAX",
  "BZPOPMIN",
  "CLIENT",
  "DISCARD",
  "EXEC",
  "HELLO",
  "MONITOR",
  "MULTI",
  "PSUBSCRIBE",
  "PSYNC",
  "PUNSUBSCRIBE",
  "QUIT",
  "REPLCONF",
  "RESET",
  "SELECT",
  "SSUBSCRIBE",
  "SUBSCRIBE",
  "SUNSUBSCRIBE",
  "SYNC",
  "UNSUBSCRIBE",
  "UNWATCH",
  "WAIT",
  "WAITAOF",
  "WATCH",
]);

/** Parses one JSON command array such as `["SET", "k", 1]`; numbers and booleans become strings. */
export function parseCommand(value: unknown): RedisCommand {
  if (!Array.isArray(value) || value.length === 0) {
    throw new BadRequest("ERR a command must be a non-empty JSON array");
  }
  const parts = value.map((part) => {
    if (typeof part === "string") return part;
    if (typeof part === "number" || typeof part === "boolean") return String(part);
    throw new BadRequest("ERR command arguments must be strings, numbers or booleans");
  });
  const name = parts[0]!.toUpperCase();
  const args = parts.slice(1);
  if (REFUSED.has(name) || blocksStream(name, args)) {
    throw new BadRequest(`ERR command '${parts[0]}' is not available over REST`);
  }
  return { name, args };
}

/** Parses the body of `/pipeline` and `/multi-exec`: a non-empty array of command arrays. */
export function parseCommands(value: unknown): RedisCommand[] {
  if (!Array.isArray(value) || value.length === 0) {
    throw new BadRequest("ERR expected a non-empty JSON array of commands");
  }
  return value.map(parseCommand);
}

function blocksStream(name: string, args: string[]): boolean {
  if (name !== "XREAD" && name !== "XREADGROUP") return false;
  for (const arg of args) {
    const word = arg.toUpperCase();
    if (word === "STREAMS") return false;
    if (word === "BLOCK") return true;
  }
  return false;
}

/**
 * Renders a raw ioredis reply (RESP2, read with `callBuffer` and `stringNumbers`) as JSON.
 * Bulk and status strings arrive as Buffers, integers as decimal strings: integers are written
 * as JSON numbers with every digit Redis sent; strings as UTF-8 text, or base64 when the caller
 * asked for `Upstash-Encoding: base64` (then "OK" too). Errors nested in arrays (a Lua table
 * holding a `redis.pcall` failure) become their message, never encoded.
 */
export function renderReply(value: unknown, base64: boolean): string {
  if (value === null || value === undefined) return "null";
  if (Buffer.isBuffer(value)) return JSON.stringify(value.toString(base64 ? "base64" : "utf8"));
  if (typeof value === "string") {
    return /^-?(0|[1-9][0-9]*)$/.test(value) ? value : renderReply(Buffer.from(value), base64);
  }
  if (typeof value === "number") return Number.isFinite(value) ? String(Math.trunc(value)) : "null";
  if (Array.isArray(value)) return `[${value.map((item) => renderReply(item, base64)).join(",")}]`;
  if (value instanceof Error) return JSON.stringify(value.message);
  return renderReply(String(value), base64);
}

export function resultBody(value: unknown, base64: boolean): string {
  return `{"result":${renderReply(value, base64)}}`;
}

export function errorBody(message: string): string {
  return JSON.stringify({ error: message });
}

/**
 * Reads a request body of at most `limit` bytes. Resolves null as soon as the body is known to
 * be larger (by Content-Length or while streaming) and stops reading it.
 */
export function readBody(req: IncomingMessage, limit: number): Promise<Buffer | null> {
  if (Number(req.headers["content-length"]) > limit) return Promise.resolve(null);
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    const onData = (chunk: Buffer) => {
      size += chunk.length;
      if (size > limit) {
        req.off("data", onData);
        req.pause();
        resolve(null);
        return;
      }
      chunks.push(chunk);
    };
    req.on("data", onData);
    req.once("end", () => resolve(Buffer.concat(chunks, size)));
    req.once("error", reject);
    req.once("close", () => {
      if (!req.complete) reject(new Error("request aborted"));
    });
  });
}
