import type { Keys } from "../../redis/keys.ts";
import { runCall } from "../../redis/lua/run-call.ts";
import type { RedisPort } from "../../redis/port.ts";
import { lookupBindingScriptCall } from "./scripts.generated.ts";

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

/** The hostname-aware binding lookup that runs before resolve (lua/lookup-binding-3.lua). */
export async function lookupBinding(
  redis: RedisPort,
  keys: Keys,
  input: LookupBindingInput,
): Promise<LookupBindingResult> {
  const call = lookupBindingScriptCall(
    {
      hostnameBindings: keys.hostnameBindings,
      envBindings: keys.envBindings,
      bindingQuarantine: keys.bindingQuarantine,
    },
    { binding: `${input.hostname}${input.ns}` },
  );
  const [env, takeover, quarantineUntil] = (await runCall(redis, call)) as [string, string, string];
  return { env, takeover, quarantineUntil };
}
