import { readFile } from "node:fs/promises";

/** What wrangler.toml sets for the runtime, so that Miniflare runs the Worker as `wrangler deploy` would. */
export interface WorkerCompatibility {
  compatibilityDate: string;
  compatibilityFlags: string[];
}

const WRANGLER_TOML = new URL("../wrangler.toml", import.meta.url);

/** Reads compatibility_date and compatibility_flags from a wrangler.toml (the flags may be absent); the repository's by default. */
export async function workerCompatibility(path: string | URL = WRANGLER_TOML): Promise<WorkerCompatibility> {
  const toml = await readFile(path, "utf8");
  const date = /^\s*compatibility_date\s*=\s*"([^"]+)"/m.exec(toml)?.[1];
  if (!date) throw new Error("wrangler.toml has no compatibility_date");
  const flags = /^\s*compatibility_flags\s*=\s*\[([^\]]*)\]/m.exec(toml)?.[1] ?? "";
  return { compatibilityDate: date, compatibilityFlags: [...flags.matchAll(/"([^"]+)"/g)].map((m) => m[1]!) };
}

/**
 * The Miniflare options that run a bundled Worker on loopback (a free port) as `wrangler deploy`
 * would; the caller adds its bindings. No request.cf: the app never reads it, and Miniflare would
 * download it.
 */
export function bundledWorkerOptions(scriptPath: string, compatibility: WorkerCompatibility) {
  return { host: "127.0.0.1", port: 0, modules: true as const, scriptPath, ...compatibility, cf: false };
}
