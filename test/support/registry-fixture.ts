import { afterAll, beforeAll } from "vitest";
import { startChallengeServer, type ChallengeServer } from "./challenge-server.ts";
import { credential, startTestPinboard, type TestPinboard } from "./pinboard-app.ts";
import { startTestRedis, type TestRedis } from "./redis.ts";

export interface RegistryFixture {
  t: TestRedis;
  pb: TestPinboard;
  worker: ChallengeServer;
  token: string;
}

/**
 * The usual setup of a registry test file: a private Redis, an in-process Pinboard on it, one
 * challenge-answering worker and a worker credential; torn down after the file. `ready` hands the
 * parts to the file's own variables.
 */
export function useRegistryFixture(
  env: Record<string, string>,
  ready: (f: RegistryFixture) => void,
  tokenExtra: { sub?: string; account?: string } = {},
): void {
  let f: RegistryFixture | undefined;
  beforeAll(async () => {
    const t = await startTestRedis();
    f = {
      t,
      pb: await startTestPinboard(t, env),
      worker: await startChallengeServer(),
      token: await credential("pinboard:worker", {}, tokenExtra),
    };
    ready(f);
  });
  afterAll(async () => {
    if (!f) return;
    await f.worker.close();
    await f.pb.close();
    await f.t.stop();
  });
}
