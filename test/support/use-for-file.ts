import { afterAll, beforeAll } from "vitest";

/**
 * Starts something before a test file's tests and stops it after them: `ready` hands it to the
 * file's own variables once it is up. A beforeAll/afterAll the file registers after this call
 * runs after the start and before the stop (vitest runs afterAll hooks in reverse order).
 */
export function useForFile<T>(
  start: () => Promise<T>,
  stop: (started: T) => Promise<void>,
  ready: (started: T) => void,
): void {
  let started: { value: T } | undefined;
  beforeAll(async () => {
    started = { value: await start() };
    ready(started.value);
  });
  afterAll(async () => {
    if (started) await stop(started.value);
  });
}
