import { type ChallengeServer, startChallengeServer } from "./challenge-server.ts";
import { credential } from "./pinboard-app.ts";
import { startTestRedis, type TestRedis } from "./redis.ts";
import { useForFile } from "./use-for-file.ts";
import { startWorkersEntry, type WorkersEntry } from "./workerd-entry.ts";

export interface WorkersEntryFixture {
  t: TestRedis;
  wk: WorkersEntry;
  /** A challenge-answering worker. */
  worker: ChallengeServer;
  /** A pinboard:worker credential. */
  token: string;
}

/**
 * The usual setup of a Workers-entry test file: a private Redis, the Workers entry on it with the
 * bindings `env`, a challenge-answering worker and a worker credential; torn down after the file.
 * `ready` hands the parts to the file's own variables once they are up.
 */
export function useWorkersEntryFixture(env: Record<string, string>, ready: (f: WorkersEntryFixture) => void): void {
  useForFile(
    async () => {
      const t = await startTestRedis();
      try {
        const [wk, worker, token] = await Promise.all([
          startWorkersEntry({ redis: t, env }),
          startChallengeServer(),
          credential("pinboard:worker"),
        ]);
        return { t, wk, worker, token };
      } catch (err) {
        await t.stop();
        throw err;
      }
    },
    async ({ t, wk, worker }) => {
      await wk.stop();
      await worker.close();
      await t.stop();
    },
    ready,
  );
}
