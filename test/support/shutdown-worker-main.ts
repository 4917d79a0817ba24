/**
 * A worker process for shutdown tests: /counter, and the Held instance
 * (test/support/held-instances.ts) on /held, so a test can keep a request in flight across
 * SIGTERM for exactly as long as it wants. Registers with PINBOARD_URL using
 * CREDENTIAL, prints one line `ready {"sessionId":…,"url":…}` once registered, and
 * `deregistered` just before it exits; GRACE_MS is handleShutdownSignals' grace, MAX_INSTANCES
 * the resident instances it takes at most (the library's default otherwise), LOG_WARNINGS=1 prints
 * warnings (message, then fields as JSON) to stderr. A line `open NAME` on stdin opens gate NAME
 * (a /held instance's gate is `/held/{id}`), for requests held across SIGTERM, when a request
 * through Pinboard can no longer reach the instance.
 */
import { createInterface } from "node:readline";
import { createWorker, handleShutdownSignals } from "../../src/pinned/index.ts";
import { gate } from "./gates.ts";
import { Held } from "./held-instances.ts";
import { Counter } from "./sample-instances.ts";

const worker = createWorker({
  pinboardUrl: process.env.PINBOARD_URL!,
  credential: process.env.CREDENTIAL!,
  clientId: process.env.CLIENT_ID,
  namespaces: { "/counter": Counter, "/held": Held },
  ...(process.env.MAX_INSTANCES ? { maxInstances: Number(process.env.MAX_INSTANCES) } : {}),
  logger: {
    info: () => {},
    warn: process.env.LOG_WARNINGS ? (m, f) => console.error(f ? `${m} ${JSON.stringify(f)}` : m) : () => {},
    error: (m, f) => console.error(m, f ?? ""),
  },
});
const listening = await worker.listen({ port: 0 });
const stopWorker = worker.stop;
Object.assign(worker, {
  stop: async (options?: { graceMs?: number }) => {
    await stopWorker(options);
    console.log("deregistered");
  },
});
handleShutdownSignals(worker, { listening, graceMs: Number(process.env.GRACE_MS ?? 5000) });
await worker.start();
console.log(`ready ${JSON.stringify({ sessionId: worker.sessionId, url: listening.url })}`);
createInterface({ input: process.stdin }).on("line", (line) => {
  const name = /^open (.+)$/.exec(line)?.[1];
  if (name) gate(name).open();
});
