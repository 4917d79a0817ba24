/**
 * A Lua script with the SHA1 that Redis' SCRIPT LOAD returns for it. The scripts are .lua files
 * in each feature's `lua/` folder; `npm run lua` (scripts/build-lua.ts) expands their includes and
 * writes each one's source and SHA1 into the folder's scripts.generated.ts, so no runtime reads a
 * file or hashes anything before its first EVALSHA (test/contract/script-shas.test.ts checks the
 * SHA1 against SCRIPT LOAD). Pinboard's scripts and the worker library's durability scripts
 * (src/pinned/lua/) live in this one registry.
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

/** Every script defined so far (importing a feature's lua/scripts.generated.ts defines its scripts). */
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
