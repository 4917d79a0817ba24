/**
 * A worker process serving /counter with IdentityCounter (test/support/identity-counter.ts), state
 * in a Redis durability store: registers with PINBOARD_URL using CREDENTIAL as CLIENT_ID, names
 * itself WORKER_NAME in every answer, and prints `ready {"sessionId":…,"url":…}` once registered.
 * Meant to be SIGKILLed; SIGTERM deregisters first.
 */
import { RedisDurabilityStore, createWorker, handleShutdownSignals } from "../../src/pinned/index.ts";
import { IdentityCounter } from "./identity-counter.ts";

const worker = createWorker({
  pinboardUrl: process.env.PINBOARD_URL!,
  credential: process.env.CREDENTIAL!,
  clientId: process.env.CLIENT_ID,
  namespaces: { "/counter": IdentityCounter },
  durability: new RedisDurabilityStore({ redis: process.env.DURABLE_REDIS_URL! }),
  logger: { info: () => {}, warn: () => {}, error: (m, f) => console.error(m, f ?? "") },
});
const listening = await worker.listen({ port: 0 });
handleShutdownSignals(worker, { listening, graceMs: 2000 });
await worker.start();
console.log(`ready ${JSON.stringify({ sessionId: worker.sessionId, url: listening.url })}`);
