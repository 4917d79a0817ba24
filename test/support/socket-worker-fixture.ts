import type { PinboardProcess } from "./pinboard-process.ts";
import { usePinboardProcess } from "./pinboard-process-fixture.ts";
import { endColdStart, type TestRedis } from "./redis.ts";
import { type SocketWorker, startSocketWorker } from "./socket-worker.ts";
import { useForFile } from "./use-for-file.ts";

/**
 * usePinboardProcess on `env` with a socket worker registered for `namespace`, every bucket past
 * its cold start. The hand-written worker never heartbeats: the lease outlives the file.
 */
export function useSocketWorkerBehindPinboard(
  env: Record<string, string>,
  namespace: string,
  ready: (f: { t: TestRedis; pb: PinboardProcess; worker: SocketWorker }) => void,
): void {
  let parts: { t: TestRedis; pb: PinboardProcess } | undefined;
  usePinboardProcess({ ...env, PINBOARD_LEASE_TTL_MS: "600000" }, (f) => (parts = f));
  useForFile(
    async () => {
      const { t, pb } = parts!;
      const worker = await startSocketWorker(pb.url, await pb.workerCredential(), namespace);
      await endColdStart(t);
      return { t, pb, worker };
    },
    (f) => f.worker.close(),
    ready,
  );
}
