/**
 * A worker process with a Redis durability store, for sweeper and fault tests: registers with
 * PINBOARD_URL using CREDENTIAL, serves /counter with state in DURABLE_REDIS_URL (or the Redis
 * Cluster DURABLE_REDIS_CLUSTER_NODES), and prints `ready {"sessionId":…,"url":…}` once registered. COUNTER=identity serves IdentityCounter
 * (answers name WORKER_NAME, test/support/identity-counter.ts) instead of the plain Counter
 * (test/support/sample-instances.ts); WS_PROBE=1 adds /probe (WsProbe, an echo). Meant to be SIGKILLed; SIGTERM deregisters first.
 */
import { createWorker, handleShutdownSignals, RedisDurabilityStore } from "../../src/pinned/index.ts";
import { clusterClient } from "./durability.ts";
import { IdentityCounter } from "./identity-counter.ts";
import { Counter } from "./sample-instances.ts";
import { WsProbe } from "./ws-instances.ts";

const worker = createWorker({
  pinboardUrl: process.env.PINBOARD_URL!,
  credential: process.env.CREDENTIAL!,
  clientId: process.env.CLIENT_ID,
  namespaces: {
    "/counter": process.env.COUNTER === "identity" ? IdentityCounter : Counter,
    ...(process.env.WS_PROBE === "1" ? { "/probe": WsProbe } : {}),
  },
  durability: new RedisDurabilityStore({
    redis: process.env.DURABLE_REDIS_CLUSTER_NODES
      ? clusterClient(process.env.DURABLE_REDIS_CLUSTER_NODES)
      : process.env.DURABLE_REDIS_URL!,
  }),
  logger: { info: () => {}, warn: () => {}, error: (m, f) => console.error(m, f ?? "") },
  // Every call Pinboard makes (forwards, the sweeper's _wake and _alarm, stats) names itself.
  requireBoundAttestation: true,
});
const listening = await worker.listen({ port: 0 });
handleShutdownSignals(worker, { listening, graceMs: 2000 });
await worker.start();
console.log(`ready ${JSON.stringify({ sessionId: worker.sessionId, url: listening.url })}`);
