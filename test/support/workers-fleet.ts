import { createWorker, type InstanceClass, type PinnedWorker } from "../../src/pinned/index.ts";
import { credential } from "./pinboard-app.ts";
import { endColdStart, startTestRedis, type TestRedis } from "./redis.ts";
import { startWorkersEntry, type WorkersEntry } from "./workerd-entry.ts";

export interface WorkersFleet {
  t: TestRedis;
  entry: WorkersEntry;
  worker: PinnedWorker;
  stop(): Promise<void>;
}

/**
 * A private Redis, the Workers entry inside workerd on it, and one worker-library process
 * registered there serving `namespaces`, with the cold-start quarantine already over.
 */
export async function startWorkersFleet(options: {
  namespaces: Record<string, InstanceClass>;
  env?: Record<string, string>;
}): Promise<WorkersFleet> {
  const t = await startTestRedis();
  const entry = await startWorkersEntry({ redis: t, ...(options.env ? { env: options.env } : {}) });
  const worker = createWorker({
    pinboardUrl: entry.url,
    credential: await credential("pinboard:worker"),
    namespaces: options.namespaces,
    logger: { info: () => {}, warn: () => {}, error: () => {} },
  });
  const listening = await worker.listen({ port: 0 });
  await worker.start();
  await endColdStart(t);
  return {
    t,
    entry,
    worker,
    async stop() {
      await worker.stop();
      await listening.close();
      await entry.stop();
      await t.stop();
    },
  };
}
