import { type PinboardProcess, startPinboardProcess } from "./pinboard-process.ts";
import { startTestRedis, type TestRedis } from "./redis.ts";
import { useForFile } from "./use-for-file.ts";

/**
 * A private Redis and the real Node entry on it with `env`, for the whole test file: `ready` hands
 * them to the file's own variables once they are up; both stopped after the file. A
 * beforeAll/afterAll of the file's own registered after this call runs after the start and before
 * the stop (vitest runs afterAll hooks in reverse order), so workers it starts close first.
 */
export function usePinboardProcess(
  env: Record<string, string>,
  ready: (parts: { t: TestRedis; pb: PinboardProcess }) => void,
): void {
  useForFile(
    async () => {
      const t = await startTestRedis();
      try {
        return { t, pb: await startPinboardProcess({ redis: t, env }) };
      } catch (err) {
        await t.stop();
        throw err;
      }
    },
    async ({ t, pb }) => {
      await pb.stop();
      await t.stop();
    },
    ready,
  );
}
