import type { RuntimeInfo } from "../../deps/runtime-info.ts";
import { nodeJwsHs256 } from "./jws.ts";

/**
 * What the core may ask of a Node process: promises and timers run on between requests, undici's
 * fetch decodes a Content-Encoding body, RSS is readable and node:crypto signs attestations
 * synchronously.
 */
export function nodeRuntime(): RuntimeInfo {
  return {
    label: "node",
    backgroundWork: "runs-on",
    fetchDecodesBodies: true,
    startedAt: Date.now(),
    rssBytes: () => process.memoryUsage.rss(),
    signJws: nodeJwsHs256,
  };
}
