/**
 * A worker process with a Redis durability store, for sweeper and fault tests: registers with
 * PINBOARD_URL using CREDENTIAL, serves /counter (test/support/worker-fixtures.ts) with state in
 * DURABLE_REDIS_URL, and prints `ready {"sessionId":…,"url":…}` once registered. It is meant to
 * be killed with SIGKILL; SIGTERM deregisters first.
 */
import { RedisDurabilityStore, createWorker, handleShutdownSignals } from "../../src/pinned/index.ts";
import { Counter } from "./worker-fixtures.ts";

const worker = createWorker({
  pinboardUrl: process.env.PINBOARD_URL!,
  credential: process.env.CREDENTIAL!,
  clientId: process.env.CLIENT_ID,
  namespaces: { "/counter": Counter },
  durability: new RedisDurabilityStore({ redis: process.env.DURABLE_REDIS_URL! }),
  logger: { info: () => {}, warn: () => {}, error: (m, f) => console.error(m, f ?? "") },
});
const listening = await worker.listen({ port: 0 });
handleShutdownSignals(worker, { listening, graceMs: 2000 });
await worker.start();
console.log(`ready ${JSON.stringify({ sessionId: worker.sessionId, url: listening.url })}`);
