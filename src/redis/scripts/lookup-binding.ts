import { defineScript } from "../../contract/lua-script.ts";
import type { Keys } from "../keys.ts";
import type { RedisPort } from "../port.ts";

/**
 * lookup-binding: the hostname-aware binding lookup that runs before resolve, in one round trip:
 * the (hostname, ns) binding names the env, the env binding its takeover, and a displaced
 * binding carries a quarantine.
 *
 * KEYS[1] hostname bindings   hash {hostname}{ns} → env \n epoch
 * KEYS[2] env bindings        hash env → takeover \n epoch
 * KEYS[3] binding quarantine  hash {hostname}{ns} → until ms
 * ARGV[1] {hostname}{ns}
 *
 * Returns {env or "", takeover or "", quarantine until ms or ""}.
 */
const LUA = `
local b = redis.call('HGET', KEYS[1], ARGV[1])
if not b then return {'', '', ''} end
local env = string.sub(b, 1, (string.find(b, '\\n', 1, true) or (#b + 1)) - 1)
local t = redis.call('HGET', KEYS[2], env)
local takeover = t and string.sub(t, 1, (string.find(t, '\\n', 1, true) or (#t + 1)) - 1) or ''
return {env, takeover, redis.call('HGET', KEYS[3], ARGV[1]) or ''}
`;

export const lookupBindingScript = defineScript("lookup-binding", LUA, "f07b205b084eb93f0815ad981938702aa0d9ffb1");

export interface LookupBindingInput {
  hostname: string;
  ns: string;
}

/** Each "" when there is none. */
export interface LookupBindingResult {
  env: string;
  takeover: string;
  /** Binding quarantine until (ms). */
  quarantineUntil: string;
}

export async function lookupBinding(
  redis: RedisPort,
  keys: Keys,
  input: LookupBindingInput,
): Promise<LookupBindingResult> {
  const [env, takeover, quarantineUntil] = (await redis.run(
    lookupBindingScript,
    [keys.hostnameBindings, keys.envBindings, keys.bindingQuarantine],
    [`${input.hostname}${input.ns}`],
  )) as [string, string, string];
  return { env, takeover, quarantineUntil };
}
