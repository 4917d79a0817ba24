/**
 * A worker process serving the two example namespaces, /counter and /chat, with durable state
 * in Redis. Run several of them against one Pinboard and one durability Redis: Pinboard places
 * each id on one of them, and when a worker dies its ids move to another one with their state.
 *
 *   . .pinboard/dev.env && CLIENT_ID=worker-a npx tsx examples/worker.ts
 *
 * (`npm start` writes PINBOARD_URL, PINBOARD_WORKER_TOKEN and DURABLE_REDIS_URL to .pinboard/dev.env.)
 *
 * Variables:
 *   PINBOARD_URL           Pinboard's base URL (required)
 *   PINBOARD_WORKER_TOKEN  Passport credential with the pinboard:worker scope (required)
 *   DURABLE_REDIS_URL      Redis for instance state (required): the dev store's workers' user, or a
 *                          Redis user limited to the durable store's keys (docs/operations.md,
 *                          "The workers' Redis"); Pinboard's sweeper reads the index there
 *   CLIENT_ID              stable worker name (operator drains use it); default: random
 *   PORT                   listen port; default 0 (a free one)
 *   HOST                   listen address; default 127.0.0.1
 *   ADVERTISE_URL          the URL Pinboard reaches this worker at; default: the listen URL
 */
import { createWorker, handleShutdownSignals, type PinnedWorker, RedisDurabilityStore } from "../src/pinned/index.ts";
import { ChatRoom } from "./chat-room.ts";
import { Counter } from "./counter.ts";

function required(name: string): string {
  const value = process.env[name];
  if (!value) {
    console.error(`examples/worker.ts: set ${name} (see the comment at the top of the file)`);
    process.exit(2);
  }
  return value;
}

const pinboardUrl = required("PINBOARD_URL");
const credential = required("PINBOARD_WORKER_TOKEN");
const durableRedisUrl = required("DURABLE_REDIS_URL");

/** A configuration error (createWorker, listen): its message says what to do; no stack. */
function fail(err: unknown): never {
  console.error(`examples/worker.ts: ${err instanceof Error ? err.message : String(err)}`);
  process.exit(2);
}

let worker: PinnedWorker;
try {
  worker = createWorker({
    pinboardUrl,
    credential,
    clientId: process.env.CLIENT_ID || undefined,
    advertiseUrl: process.env.ADVERTISE_URL || undefined,
    // Namespace → instance class, like the durable_objects bindings of a wrangler.toml.
    namespaces: {
      "/counter": Counter,
      "/chat": ChatRoom,
    },
    // Durable state, fenced by placement epoch, under the key prefix "pinned:" (the default,
    // which Pinboard's sweeper reads for wakes and due alarms).
    durability: new RedisDurabilityStore({ redis: durableRedisUrl }),
  });
} catch (err) {
  fail(err); // e.g. PINBOARD_URL without http://
}

// listen() first: the worker advertises the URL it listens on, and Pinboard probes it
// (GET /_pinned/challenge) while registering. listen() also enables WebSocket accept.
const listening = await worker
  .listen({ port: Number(process.env.PORT || 0), host: process.env.HOST || "127.0.0.1" })
  .catch(fail); // e.g. PORT in use

// SIGTERM / SIGINT: drain (Pinboard stops placing here), hand the instances over (new requests
// are re-placed on another worker at once, each instance is released once its in-flight requests
// finish), deregister, close the server, exit 0. A timed operator drain that reaches its deadline
// (worker.drained) exits 0 too: the worker no longer serves until it is undrained and restarted.
handleShutdownSignals(worker, { listening });

// Registers (answering Pinboard's challenge probe) and starts heartbeating the lease. Transient
// failures are retried with backoff; a refused credential (401/403, 4xx) is final.
try {
  await worker.start();
} catch (err) {
  console.error(`worker ${worker.clientId}: registration refused: ${err instanceof Error ? err.message : String(err)}`);
  await listening.close();
  process.exit(1);
}
console.log(
  `worker ${worker.clientId} (pid ${process.pid}) serving /counter and /chat at ${listening.url}, session ${worker.sessionId}`,
);
