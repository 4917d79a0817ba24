/**
 * A fleet of bench workers in one process: BENCH_WORKERS workers built with the worker library
 * (createWorker), each its own registered session with a distinct clientId and secret, all
 * served by one HTTP server: worker i answers under the path prefix /w{i}, which is the path of
 * its advertise URL (http://127.0.0.1:PORT/w{i}), so one socket answers every challenge probe
 * and every forward. Each worker's instances are `Tiny`: a minimal instance answering an 11-byte
 * body, so the bench measures the path to it, not the work behind it. A request whose path ends
 * in `/chunked` gets the body as a stream of unknown length, which the server sends chunked (no
 * Content-Length); any other path gets it with a Content-Length.
 *
 * Environment: PINBOARD_URL, BENCH_CREDENTIAL, BENCH_WORKERS, BENCH_NAMESPACES ("/hot,/new"),
 * BENCH_CLIENT_PREFIX, BENCH_PORT (default 0: any), BENCH_REGISTER_CONCURRENCY (default 8).
 * Pinboard may still be starting: the fleet waits for its /readyz before registering.
 * Prints {"bench":"progress","registered":n} every 50 registrations, then
 * {"bench":"ready","url":…,"workers":[{clientId,sessionId,advertiseUrl,secret}]} (the workers
 * registered; fewer than asked when the bench sent "enough" on stdin).
 * Exits when stdin closes or on SIGTERM (without deregistering: the bench is tearing down).
 */

import type { Server } from "node:http";
import type { AddressInfo } from "node:net";
import { createInterface } from "node:readline";
import { serve } from "@hono/node-server";
import { createWorker, type Instance, type PinnedWorker } from "../src/pinned/index.ts";
import { childEnv } from "./child-env.ts";
import { exitWithParent } from "./child-lifetime.ts";

const BODY = "hello world";
const BODY_BYTES = new TextEncoder().encode(BODY);
const HEADERS = { "content-type": "text/plain" };

/** The minimal instance: a constant 11-byte body, no storage; framed by the path's last segment. */
export class Tiny implements Instance {
  fetch(request: Request): Response {
    if (!request.url.endsWith("/chunked")) return new Response(BODY, { headers: HEADERS });
    // @hono/node-server writes a stream body of a Response built here (its own Response class)
    // without reading ahead, so with no Content-Length the answer goes out chunked.
    const stream = new ReadableStream<Uint8Array>({
      start(controller) {
        controller.enqueue(BODY_BYTES);
        controller.close();
      },
    });
    return new Response(stream, { headers: HEADERS });
  }
}

/** Warnings and errors go to stderr, where the bench keeps a tail of them for its error messages. */
const logger = {
  info: () => {},
  warn: (message: string, fields?: Record<string, unknown>) =>
    console.error(`[fleet warn] ${message} ${fields ? JSON.stringify(fields) : ""}`),
  error: (message: string, fields?: Record<string, unknown>) =>
    console.error(`[fleet error] ${message} ${fields ? JSON.stringify(fields) : ""}`),
};

const env = (name: string, fallback?: string): string => childEnv("fleet", name, fallback);

async function main(): Promise<void> {
  const pinboardUrl = env("PINBOARD_URL");
  const credential = env("BENCH_CREDENTIAL");
  const count = Number(env("BENCH_WORKERS", "1"));
  const namespaces = env("BENCH_NAMESPACES", "/hot").split(",");
  const prefix = env("BENCH_CLIENT_PREFIX", "bench");
  const concurrency = Number(env("BENCH_REGISTER_CONCURRENCY", "8"));
  const port = Number(env("BENCH_PORT", "0"));

  const apps: PinnedWorker[] = [];
  const server = serve({
    port,
    hostname: "127.0.0.1",
    fetch: (request: Request) => {
      // "/w17/…" → worker 17; its routes already carry the /w17 prefix (its basePath).
      const path = request.url.slice(request.url.indexOf("/", 8));
      const end = path.indexOf("/", 1);
      const n = path.charCodeAt(1) === 119 /* w */ ? Number(path.slice(2, end < 0 ? undefined : end)) : NaN;
      const worker = apps[n];
      return worker ? worker.app.fetch(request) : new Response("no such worker", { status: 404 });
    },
  }) as Server;
  await new Promise<void>((resolve, reject) => {
    if (server.listening) return resolve();
    server.once("listening", resolve);
    server.once("error", reject);
  });
  // Pinboard keeps many pooled connections to us; never let idle ones be cut mid-run.
  server.keepAliveTimeout = 60_000;
  const base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;

  exitWithParent(server);

  for (let i = 0; i < count; i++) {
    apps.push(
      createWorker({
        pinboardUrl,
        credential,
        clientId: `${prefix}-${i}`,
        advertiseUrl: `${base}/w${i}`,
        namespaces: Object.fromEntries(namespaces.map((ns) => [ns, Tiny])),
        // pinboard-new activates one instance per request: never refuse for capacity.
        maxInstances: 50_000_000,
        logger,
      }),
    );
  }
  // Pinboard may be starting alongside us: wait until it serves.
  for (const deadline = Date.now() + 60_000; ; ) {
    const ready = await fetch(`${pinboardUrl}/readyz`).then(
      (r) => {
        void r.arrayBuffer();
        return r.status === 200;
      },
      () => false,
    );
    if (ready) break;
    if (Date.now() > deadline) throw new Error(`Pinboard at ${pinboardUrl} never became ready`);
    await new Promise((r) => setTimeout(r, 100));
  }

  // Workers register `concurrency` at a time. "enough" on stdin stops starting new ones: the
  // fleet then reports the workers registered so far (stopping any still retrying after 10 s).
  let nextIndex = 0;
  let registered = 0;
  let enough = false;
  const started = Date.now();
  const registerNext = async (): Promise<void> => {
    while (!enough && nextIndex < apps.length) {
      const worker = apps[nextIndex++]!;
      try {
        await worker.start();
      } catch {
        continue; // stopped below after "enough", or refused for good: not part of the fleet
      }
      if (++registered % 50 === 0 && registered < apps.length) {
        process.stdout.write(
          `${JSON.stringify({ bench: "progress", registered, seconds: (Date.now() - started) / 1000 })}\n`,
        );
      }
    }
  };
  const all = Promise.all(Array.from({ length: Math.max(1, concurrency) }, registerNext));
  const stopped = new Promise<void>((resolve) => {
    createInterface({ input: process.stdin }).on("line", (line) => {
      if (line.trim() !== "enough" || enough) return;
      enough = true;
      // Registrations under way finish (or give up after 10 s and are stopped).
      const giveUp = setTimeout(() => {
        for (const w of apps.slice(0, nextIndex)) if (w.sessionId === null) void w.stop().catch(() => {});
        resolve();
      }, 10_000);
      void all.then(() => {
        clearTimeout(giveUp);
        resolve();
      });
    });
  });
  await Promise.race([all, stopped]);

  const live = apps.filter((w) => w.sessionId !== null);
  process.stdout.write(
    `${JSON.stringify({
      bench: "ready",
      url: base,
      pid: process.pid,
      requested: count,
      seconds: (Date.now() - started) / 1000,
      workers: live.map((w) => ({
        clientId: w.clientId,
        sessionId: w.sessionId,
        advertiseUrl: w.advertiseUrl,
        secret: w.secret,
      })),
    })}\n`,
  );
}

main().catch((err: unknown) => {
  console.error(`fleet failed: ${err instanceof Error ? (err.stack ?? err.message) : String(err)}`);
  process.exit(1);
});
