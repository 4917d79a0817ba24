import { startPinboardProcess } from "./pinboard-process.ts";
import type { TestRedis } from "./redis.ts";
import { startWorkersEntry } from "./workerd-entry.ts";

/** The Node or the Workers entry, as a test that runs the same checks on both sees it. */
export interface Entry {
  /** Base URL, no trailing slash. */
  url: string;
  stop(): Promise<void>;
}

/** The real Node entry as a process, on `t`, with the settings `env`. */
export async function nodeEntry(t: TestRedis, env: Record<string, string>): Promise<Entry> {
  const pb = await startPinboardProcess({ redis: t, env });
  return { url: pb.url, stop: () => pb.stop() };
}

/** The Workers entry in workerd, on `t` through the REST bridge, with the bindings `env`. */
export async function workersEntry(t: TestRedis, env: Record<string, string>): Promise<Entry> {
  const entry = await startWorkersEntry({ redis: t, env });
  return { url: entry.url, stop: () => entry.stop() };
}
