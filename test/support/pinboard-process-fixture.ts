import { afterAll, beforeAll } from "vitest";
import { type PinboardProcess, startPinboardProcess } from "./pinboard-process.ts";
import { startTestRedis, type TestRedis } from "./redis.ts";

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
  let t: TestRedis | undefined;
  let pb: PinboardProcess | undefined;
  beforeAll(async () => {
    t = await startTestRedis();
    pb = await startPinboardProcess({ redis: t, env });
    ready({ t, pb });
  });
  afterAll(async () => {
    await pb?.stop();
    await t?.stop();
  });
}
