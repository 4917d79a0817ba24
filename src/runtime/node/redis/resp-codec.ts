/**
 * RESP2, the Redis wire protocol, as the Node entry's own connection speaks it
 * (resp-connection.ts): commands out as arrays of bulk strings, replies in as JS values the way
 * ioredis hands them over (bulk and simple strings as UTF-8 strings, integers as numbers, nil as
 * null, arrays as arrays), and error replies as `ReplyError`.
 */

/** What a reply decodes to; an error reply inside an array stays a ReplyError value there. */
export type RespValue = string | number | null | ReplyError | RespValue[];

/**
 * Redis ran the command and refused it (`-ERR …`, `-NOSCRIPT …`, `-LOADING …`). Named as ioredis
 * names it, so GuardedRedis tells a refusal (a 500, or a transient state) from an outage alike.
 */
export class ReplyError extends Error {
  constructor(message: string) {
    super(message);
    this.name = "ReplyError";
  }
}

/** One command as RESP: `*<n>` then each argument as a bulk string. */
export function encodeCommand(args: readonly (string | number)[]): string {
  let out = `*${args.length}\r\n`;
  for (let i = 0; i < args.length; i++) {
    const arg = args[i]!;
    const text = typeof arg === "string" ? arg : String(arg);
    out += `$${Buffer.byteLength(text)}\r\n${text}\r\n`;
  }
  return out;
}

const CR = 0x0d;
/** A parse step that ran out of bytes: the value is parsed again from its start when more arrive. */
const INCOMPLETE = Symbol("incomplete");
/** A parse step that read an array's header: its items come next. */
const ARRAY = Symbol("array");

/** An array being filled: its items so far and where the next goes. */
interface Frame {
  items: RespValue[];
  next: number;
}

/**
 * Decodes a stream of replies, however the socket splits it, and hands each complete one to
 * `onReply` in order. Linear in the reply's size however it is split: the items of an array
 * already read are kept while the rest arrives, and a bulk string cut by a chunk boundary is
 * joined once, when all of its bytes are in.
 */
export class RespParser {
  /** Bytes not yet parsed: what is left of the current chunk, or an incomplete value's start. */
  private buffer: Buffer | null = null;
  private offset = 0;
  /** Chunks held back until `needed` bytes are in (an incomplete bulk string). */
  private held: Buffer[] = [];
  private heldBytes = 0;
  private needed = 0;
  private readonly stack: Frame[] = [];

  constructor(private readonly onReply: (reply: RespValue) => void) {}

  push(chunk: Buffer): void {
    if (this.buffer !== null) {
      this.held.push(chunk);
      this.heldBytes += chunk.length;
      if (this.heldBytes < this.needed) return;
      this.held.unshift(this.buffer.subarray(this.offset));
      chunk = Buffer.concat(this.held);
      this.held = [];
    }
    this.buffer = chunk;
    this.offset = 0;
    while (this.offset < chunk.length) {
      const start = this.offset;
      const step = this.step(chunk);
      if (step === INCOMPLETE) {
        this.offset = start;
        this.heldBytes = chunk.length - start;
        return;
      }
      if (step !== ARRAY) this.deliver(step);
    }
    this.buffer = null;
    this.offset = 0;
    this.heldBytes = 0;
    this.needed = 0;
  }

  /** Drops a partial reply (the connection it came on is gone). */
  reset(): void {
    this.buffer = null;
    this.offset = 0;
    this.held = [];
    this.heldBytes = 0;
    this.needed = 0;
    this.stack.length = 0;
  }

  /** A value into the array being filled, or to onReply when no array is open. */
  private deliver(value: RespValue): void {
    for (;;) {
      const frame = this.stack[this.stack.length - 1];
      if (frame === undefined) {
        this.onReply(value);
        return;
      }
      frame.items[frame.next++] = value;
      if (frame.next < frame.items.length) return;
      this.stack.pop();
      value = frame.items;
    }
  }

  /** One scalar, or an array's header (its frame opened), from `this.offset`. */
  private step(buffer: Buffer): RespValue | typeof INCOMPLETE | typeof ARRAY {
    const type = buffer[this.offset];
    const lineEnd = buffer.indexOf(CR, this.offset + 1);
    if (lineEnd < 0 || lineEnd + 1 >= buffer.length) {
      this.needed = buffer.length - this.offset + 1;
      return INCOMPLETE;
    }
    const lineStart = this.offset + 1;
    this.offset = lineEnd + 2;
    switch (type) {
      case 0x2b: // '+'
        return buffer.toString("utf8", lineStart, lineEnd);
      case 0x2d: // '-'
        return new ReplyError(buffer.toString("utf8", lineStart, lineEnd));
      case 0x3a: // ':'
        return integer(buffer, lineStart, lineEnd);
      case 0x24: {
        // '$'
        const length = integer(buffer, lineStart, lineEnd);
        if (length < 0) return null;
        if (this.offset + length + 2 > buffer.length) {
          this.needed = this.offset + length + 2 - (lineStart - 1);
          return INCOMPLETE;
        }
        const text = buffer.toString("utf8", this.offset, this.offset + length);
        this.offset += length + 2;
        return text;
      }
      case 0x2a: {
        // '*'
        const count = integer(buffer, lineStart, lineEnd);
        if (count < 0) return null;
        if (count === 0) return [];
        this.stack.push({ items: new Array<RespValue>(count), next: 0 });
        return ARRAY;
      }
      default:
        throw new Error(`not a RESP2 reply: type byte ${String(type)} at offset ${lineStart - 1}`);
    }
  }
}

/** A decimal integer between two offsets (RESP's lengths and integer replies). */
function integer(buffer: Buffer, start: number, end: number): number {
  let i = start;
  const negative = buffer[i] === 0x2d;
  if (negative) i++;
  let n = 0;
  for (; i < end; i++) {
    const digit = buffer[i]! - 0x30;
    if (digit < 0 || digit > 9) throw new Error(`not a RESP2 integer: ${buffer.toString("latin1", start, end)}`);
    n = n * 10 + digit;
  }
  return negative ? -n : n;
}
