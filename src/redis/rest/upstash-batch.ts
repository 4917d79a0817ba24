import type { Redis } from "@upstash/redis/cloudflare";
import type { RequestMeter } from "../request-meter.ts";
import { itemFailure, requestFailure } from "./upstash-errors.ts";

/**
 * The largest POST body the REST adapter sends, in bytes. Upstash refuses a request over its
 * max request size (`ERR max request size exceeded`; 1 MB on the free tier as this was written,
 * 10 MB on paid plans), so every pipeline is cut to stay under 900,000 bytes: under 1 MB by either
 * reading of "MB", with room to spare. A single command larger than this is sent alone (the app's
 * limits keep its commands smaller: docs/operations.md).
 */
export const REST_MAX_REQUEST_BYTES = 900_000;
/** At most this many commands in one POST /pipeline (what @upstash/redis' own auto-pipelining caps at). */
export const REST_MAX_PIPELINE_COMMANDS = 1000;

export type Pipeline = ReturnType<Redis["pipeline"]>;

/** One command: its wire form (`["evalsha", sha, 1, key, …]`, for its size) and how to add it to a pipeline. */
export interface BatchedCommand {
  wire: ReadonlyArray<string | number>;
  add(pipeline: Pipeline): void;
}

interface Queued extends BatchedCommand {
  bytes: number;
  resolve(value: unknown): void;
  reject(err: unknown): void;
}

/**
 * Collects the commands issued in one turn of the event loop (two microtasks, as @upstash/redis'
 * auto-pipelining does) and sends them as POST /pipeline requests of at most
 * REST_MAX_PIPELINE_COMMANDS commands and `maxBytes` of body each, concurrently. Each command
 * settles with its own item: a result, or its error read by upstash-errors.ts.
 */
export class RestBatcher {
  private queue: Queued[] = [];
  private scheduled = false;

  constructor(
    private readonly client: Redis,
    private readonly maxBytes = REST_MAX_REQUEST_BYTES,
    /** Drawn from before each POST /pipeline goes out; its refusal fails the pipeline's commands unsent. */
    private readonly meter?: RequestMeter,
  ) {}

  send(command: BatchedCommand): Promise<unknown> {
    return new Promise((resolve, reject) => {
      this.queue.push({ ...command, bytes: jsonBytes(command.wire) + 1, resolve, reject });
      if (this.scheduled) return;
      this.scheduled = true;
      void Promise.resolve()
        .then(() => undefined)
        .then(() => this.flush());
    });
  }

  private flush(): void {
    const queued = this.queue;
    this.queue = [];
    this.scheduled = false;
    for (const chunk of chunks(queued, this.maxBytes)) void this.exec(chunk);
  }

  private async exec(chunk: Queued[]): Promise<void> {
    try {
      this.meter?.take();
    } catch (err) {
      for (const item of chunk) item.reject(err);
      return;
    }
    const pipeline = this.client.pipeline();
    for (const item of chunk) item.add(pipeline);
    let items: Array<{ error?: string; result: unknown }>;
    try {
      items = (await pipeline.exec({ keepErrors: true })) as Array<{ error?: string; result: unknown }>;
    } catch (err) {
      const failure = requestFailure(err);
      for (const item of chunk) item.reject(failure);
      return;
    }
    chunk.forEach((item, i) => {
      const outcome = items[i];
      if (!outcome) item.reject(requestFailure("the pipeline answered fewer items than it was sent"));
      else if (outcome.error) item.reject(itemFailure(outcome.error));
      else item.resolve(outcome.result);
    });
  }
}

/**
 * Consecutive runs of commands, each within the byte and command budgets (a lone oversized command is
 * a run of its own).
 */
function chunks(queued: Queued[], maxBytes: number): Queued[][] {
  const out: Queued[][] = [];
  let current: Queued[] = [];
  let bytes = 2;
  for (const item of queued) {
    if (current.length > 0 && (bytes + item.bytes > maxBytes || current.length === REST_MAX_PIPELINE_COMMANDS)) {
      out.push(current);
      current = [];
      bytes = 2;
    }
    current.push(item);
    bytes += item.bytes;
  }
  if (current.length > 0) out.push(current);
  return out;
}

/** The UTF-8 length of a value's JSON, as the client will send it. */
export function jsonBytes(value: unknown): number {
  const text = JSON.stringify(value);
  let bytes = text.length;
  for (let i = 0; i < text.length; i++) {
    const code = text.charCodeAt(i);
    if (code < 0x80) continue;
    if (code < 0x800) {
      bytes += 1;
    } else if (code >= 0xd800 && code <= 0xdbff) {
      i++; // a surrogate pair: two UTF-16 units, four bytes
      bytes += 2;
    } else {
      bytes += 2;
    }
  }
  return bytes;
}
