import type { Keys } from "../../redis/keys.ts";
import { runCall } from "../../redis/lua/run-call.ts";
import type { RedisPort } from "../../redis/port.ts";
import { registerSessionScriptCall } from "./scripts.generated.ts";
import { sessionKeys } from "./session-keys.ts";

export interface RegisterSessionInput {
  /** The draft record's JSON (sessionId, clientId, account, hostname, env, envs, namespaces, …). */
  json: string;
  /** The draft's clientId (the drain key is the client's). */
  clientId: string;
  leaseTtlMs: number;
  hostnameAware: boolean;
  /** "" for none. */
  prevSessionId: string;
  ownerMemoryMs: number;
  ownerMemoryCap: number;
  /** The audit trail's cap: sessions pruned on the way are recorded there as worker.died. */
  auditCap: number;
  /** The account itself: an owner written before account tags holds it (matched, then replaced by the tag). */
  legacyAccount: string;
}

export type RegisterSessionResult =
  /**
   * The written record's JSON, the drain deadline (ms, "" when none), the client's session it
   * replaced ("" when none), whether the prevSessionId's rows may be reclaimed by this
   * registration, and Redis' now.
   */
  | { kind: "ok"; json: string; drainDeadline: string; replaced: string; prevAllowed: boolean; now: number }
  | { kind: "conflict"; message: string };

/** The fleet-wide half of POST /registry/register (lua/register-session-11.lua). */
export async function registerSession(
  redis: RedisPort,
  keys: Keys,
  input: RegisterSessionInput,
): Promise<RegisterSessionResult> {
  const call = registerSessionScriptCall(
    { ...sessionKeys(keys), drain: keys.drain(input.clientId) },
    {
      json: input.json,
      leaseTtlMs: input.leaseTtlMs,
      hostnameAware: input.hostnameAware ? "1" : "0",
      prevSessionId: input.prevSessionId,
      ownerMemoryMs: input.ownerMemoryMs,
      ownerMemoryCap: input.ownerMemoryCap,
      auditCap: input.auditCap,
      legacyAccount: input.legacyAccount,
    },
  );
  const reply = (await runCall(redis, call)) as string[];
  if (reply[0] === "conflict") return { kind: "conflict", message: reply[1] ?? "conflict" };
  const [, json = "", deadline = "", replaced = "", prevAllowed, now = "0"] = reply as [
    string,
    string,
    string,
    string,
    number,
    string,
  ];
  return { kind: "ok", json, drainDeadline: deadline, replaced, prevAllowed: prevAllowed === 1, now: Number(now) };
}
