/**
 * A Lua script with the SHA1 that Redis' SCRIPT LOAD returns for it. The SHA is committed next
 * to the script (`npm run script-shas` rewrites it; test/contract/script-shas.test.ts checks it against
 * SCRIPT LOAD), so no runtime hashes anything before its first EVALSHA. Pinboard's scripts
 * (src/redis/scripts/) and the worker library's durability scripts (src/pinned/durability-scripts/)
 * live in this one registry.
 */
export interface LuaScript {
  readonly name: string;
  readonly script: string;
  readonly sha: string;
}

const registry = new Map<string, LuaScript>();

export function defineScript(name: string, script: string, sha: string): LuaScript {
  if (registry.has(name)) throw new Error(`script ${name} is defined twice`);
  const entry = Object.freeze({ name, script, sha });
  registry.set(name, entry);
  return entry;
}

/** Every script defined so far (importing a scripts folder's index defines its scripts). */
export function registeredScripts(): LuaScript[] {
  return [...registry.values()];
}

/** True when a Redis error says the script cache does not hold the SHA. */
export function isNoScript(err: unknown): boolean {
  return err instanceof Error && /NOSCRIPT/i.test(err.message);
}

/**
 * Runs a script by EVALSHA and, when the server's cache does not hold it (a restart, a failover,
 * SCRIPT FLUSH), by EVAL with its source: the one fallback every Redis client here uses.
 */
export function evalScript<T>(
  script: LuaScript,
  evalsha: (sha: string) => Promise<T>,
  evalSource: (source: string) => Promise<T>,
): Promise<T> {
  return evalsha(script.sha).catch((err: unknown) => {
    if (!isNoScript(err)) throw err;
    return evalSource(script.script);
  });
}
