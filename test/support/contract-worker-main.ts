/**
 * A worker built with the worker library (src/pinned), as examples/worker.ts is, for
 * `pinboard check-worker` to check: it reads PINBOARD_URL and PINBOARD_WORKER_TOKEN, serves
 * examples' /counter and /chat, and mounts _wake with an in-memory durability store (no Redis).
 * NO_DURABILITY=1 leaves the store out (so _wake is not mounted); REQUIRE_BOUND=1 sets
 * requireBoundAttestation.
 */
import { ChatRoom } from "../../examples/chat-room.ts";
import { Counter } from "../../examples/counter.ts";
import { createWorker, handleShutdownSignals, MemoryDurabilityStore } from "../../src/pinned/index.ts";

const worker = createWorker({
  pinboardUrl: process.env.PINBOARD_URL!,
  credential: process.env.PINBOARD_WORKER_TOKEN!,
  namespaces: { "/counter": Counter, "/chat": ChatRoom },
  ...(process.env.NO_DURABILITY === "1" ? {} : { durability: new MemoryDurabilityStore() }),
  requireBoundAttestation: process.env.REQUIRE_BOUND === "1",
});
const listening = await worker.listen({ port: 0, host: "127.0.0.1" });
handleShutdownSignals(worker, { listening });
await worker.start();
console.log(`ready ${listening.url}`);
