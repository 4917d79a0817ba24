/**
 * A worker process for tests: registers with PINBOARD_URL using CREDENTIAL, serves /counter, and
 * shuts down gracefully on SIGTERM. Prints one line `ready {"sessionId":…,"url":…}` once
 * registered, and `deregistered` just before it exits.
 */
import { createWorker, handleShutdownSignals } from "../../src/pinned/index.ts";
import { Counter } from "./worker-fixtures.ts";

const worker = createWorker({
  pinboardUrl: process.env.PINBOARD_URL!,
  credential: process.env.CREDENTIAL!,
  clientId: process.env.CLIENT_ID,
  namespaces: { "/counter": Counter },
  logger: { info: () => {}, warn: () => {}, error: (m, f) => console.error(m, f ?? "") },
});
const listening = await worker.listen({ port: 0 });
const stopWorker = worker.stop;
Object.assign(worker, {
  stop: async () => {
    await stopWorker();
    console.log("deregistered");
  },
});
handleShutdownSignals(worker, { listening, graceMs: Number(process.env.GRACE_MS ?? 5000) });
await worker.start();
console.log(`ready ${JSON.stringify({ sessionId: worker.sessionId, url: listening.url })}`);
