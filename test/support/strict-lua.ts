import { createHash } from "node:crypto";
import type { LuaScript } from "../../src/contract/lua-script.ts";
import { TcpRedis } from "../../src/runtime/node/redis/tcp.ts";

/**
 * Strict Lua for cluster tests. Redis 7.0 runs a script without a shebang in compatibility mode:
 * it may touch an undeclared key of another hash slot as long as that slot lives on the same
 * node, so a 3-node cluster cannot catch such a key by itself. A script that starts with a
 * `#!lua` shebang (and no `allow-cross-slot-keys` flag) is refused "Script attempted to access
 * keys that do not hash to the same slot" for it, and "non local key" for a key of another node.
 * The script body is otherwise unchanged: same commands, same replies.
 */
export const SHEBANG = "#!lua\n";

const variants = new Map<string, LuaScript>();

/** The strict variant of a script: the same Lua under a `#!lua` shebang, with its own SHA1. */
export function strictScript(script: LuaScript): LuaScript {
  let strict = variants.get(script.name);
  if (!strict || strict.script !== SHEBANG + script.script) {
    const text = SHEBANG + script.script;
    strict = Object.freeze({ name: script.name, script: text, sha: createHash("sha1").update(text).digest("hex") });
    variants.set(script.name, strict);
  }
  return strict;
}

/**
 * Makes every script call of this process's TcpRedis adapters (EVALSHA, EVAL on NOSCRIPT) run the
 * strict variant. Returns the function that puts the original back.
 */
export function installStrictLua(): () => void {
  const original = TcpRedis.prototype.run;
  TcpRedis.prototype.run = function run(this: TcpRedis, script, keys, args) {
    return original.call(this, strictScript(script), keys, args);
  };
  return () => {
    TcpRedis.prototype.run = original;
  };
}
