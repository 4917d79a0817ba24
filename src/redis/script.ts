/**
 * A Lua script with the SHA1 that Redis' SCRIPT LOAD returns for it. The SHA is committed next
 * to the script (scripts/script-shas.ts rewrites it; a test checks it against SCRIPT LOAD), so
 * no runtime has to hash anything before its first EVALSHA.
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

/** Every script defined so far (importing src/redis/scripts/index.ts defines them all). */
export function registeredScripts(): LuaScript[] {
  return [...registry.values()];
}
