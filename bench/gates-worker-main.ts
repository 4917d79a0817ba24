/**
 * The worker `npm run bench:gates` loads: one createWorker with the README's Counter under
 * /counter, served by the library's own listen() on a free loopback port, never registered with
 * a Pinboard (no start()): it accepts attestations for BENCH_AUDIENCE (its localAudience) signed
 * with BENCH_SECRET, so wrk can drive it directly and the library alone is what is measured.
 *
 * Environment:
 *   BENCH_SECRET, BENCH_AUDIENCE  the attestation key and audience (required)
 *   BENCH_GATES     on: createWorker's defaults (input and output gates)
 *                   off: allowConcurrency + allowUnconfirmed
 *                   bare: off, and AsyncLocalStorage.prototype.run made a plain call before the
 *                         library loads, so the process never enables async_hooks' promise hooks
 *                         (the library still calls it per event): what the gates' machinery
 *                         costs beyond the gates themselves. Analysis only; with allowConcurrency
 *                         the library never reads the store it would have set.
 *   BENCH_STORE     memory (MemoryDurabilityStore) or redis (RedisDurabilityStore on BENCH_REDIS_URL)
 *   BENCH_REDIS_URL, BENCH_PREFIX  the Redis and the key prefix of this worker (one per worker)
 * Prints {"bench":"ready","url":…,"pid":…}; exits when stdin closes or on SIGTERM.
 */
import { AsyncLocalStorage } from "node:async_hooks";
import type { DurabilityStore, Instance, RequestContext } from "../src/pinned/index.ts";
import { childEnv } from "./child-env.ts";
import { exitWithParent } from "./child-lifetime.ts";

const env = (name: string, fallback?: string): string => childEnv("gates-worker", name, fallback);

export type GateMode = "on" | "off" | "bare";
export type StoreKind = "memory" | "redis";

/** The README's Counter, on GET for every path so wrk sends no body; `/stored` reads the store each time. */
class Counter implements Instance {
  count: number | undefined;

  async fetch(_request: Request, ctx: RequestContext): Promise<Response> {
    // The stored count, read through the store every time: the `stored` load.
    if (ctx.path === "/stored") return Response.json({ count: (await ctx.storage.get<number>("count")) ?? 0 });
    this.count ??= (await ctx.storage.get<number>("count")) ?? 0;
    if (ctx.path === "/incr") await ctx.storage.put("count", ++this.count);
    return Response.json({ count: this.count });
  }
}

/** Warnings and errors go to stderr, kept by the bench for its error messages; info is dropped. */
const logger = {
  info: () => {},
  warn: (message: string, fields?: Record<string, unknown>) =>
    console.error(`[gates-worker warn] ${message} ${fields ? JSON.stringify(fields) : ""}`),
  error: (message: string, fields?: Record<string, unknown>) =>
    console.error(`[gates-worker error] ${message} ${fields ? JSON.stringify(fields) : ""}`),
};

function gateMode(value: string): GateMode {
  if (value === "on" || value === "off" || value === "bare") return value;
  throw new Error(`gates-worker: BENCH_GATES is on, off or bare, not ${JSON.stringify(value)}`);
}

function durability(kind: string, pinned: typeof import("../src/pinned/index.ts")): DurabilityStore {
  const { MemoryDurabilityStore, RedisDurabilityStore } = pinned;
  if (kind === "memory") return new MemoryDurabilityStore();
  if (kind === "redis") return new RedisDurabilityStore({ redis: env("BENCH_REDIS_URL"), prefix: env("BENCH_PREFIX") });
  throw new Error(`gates-worker: BENCH_STORE is memory or redis, not ${JSON.stringify(kind)}`);
}

async function main(): Promise<void> {
  const mode = gateMode(env("BENCH_GATES", "on"));
  if (mode === "bare") {
    // Before the library is loaded: its module-level AsyncLocalStorage never enables the hooks.
    AsyncLocalStorage.prototype.run = function run<R, A extends unknown[]>(
      _store: unknown,
      callback: (...args: A) => R,
      ...args: A
    ): R {
      return callback(...args);
    };
  }
  const pinned = await import("../src/pinned/index.ts");
  const worker = pinned.createWorker({
    pinboardUrl: "http://127.0.0.1:9", // never called: the worker is not started
    credential: "unused",
    secret: env("BENCH_SECRET"),
    localAudience: env("BENCH_AUDIENCE"),
    namespaces: { "/counter": Counter },
    durability: durability(env("BENCH_STORE", "memory"), pinned),
    allowConcurrency: mode !== "on",
    allowUnconfirmed: mode !== "on",
    logger,
  });
  const listening = await worker.listen({ port: 0 });
  listening.server.keepAliveTimeout = 60_000;
  exitWithParent(listening.server);
  process.stdout.write(`${JSON.stringify({ bench: "ready", url: listening.url, pid: process.pid, mode })}\n`);
}

main().catch((err: unknown) => {
  console.error(`gates-worker failed: ${err instanceof Error ? (err.stack ?? err.message) : String(err)}`);
  process.exit(1);
});
