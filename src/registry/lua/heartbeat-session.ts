import type { Keys } from "../../redis/keys.ts";
import { runCall } from "../../redis/lua/run-call.ts";
import type { RedisPort } from "../../redis/port.ts";
import { heartbeatSessionScriptCall } from "./scripts.generated.ts";
import { sessionKeys } from "./session-keys.ts";

export interface HeartbeatSessionInput {
  sessionId: string;
  /** The clientId the caller read (the drain key is the client's). */
  clientId: string;
  headroom: number;
  /** The worker reports itself draining. */
  draining: boolean;
  probe: "pass" | "fail" | "mismatch";
  leaseTtlMs: number;
  hostnameAware: boolean;
  /** The record's legacy plaintext secret sealed (it replaces it); "" leaves the secret as it is. */
  sealedSecret: string;
  /** The caller's account tag, replacing the account itself where an entry was written before tags. */
  accountTag: string;
  /** The caller's account: an entry holding it is rewritten with accountTag. */
  legacyAccount: string;
  acks: readonly string[];
}

export type HeartbeatSessionResult =
  /**
   * The renewed record's JSON, the drain deadline (ms, "" when none), Redis' now and the flat {msgId,
   * message JSON, …} queue.
   */
  | { kind: "ok"; json: string; drainDeadline: string; now: number; messages: string[] }
  | { kind: "unknown" }
  /** The dropped record's JSON and the generation its bucket tombstones carry. */
  | { kind: "voided"; json: string; generation: string }
  /** As voided, with the binding that moved: key {hostname}{ns}, its env and epoch. */
  | { kind: "superseded"; json: string; generation: string; key: string; env: string; epoch: string };

/** The fleet-wide half of POST /registry/heartbeat (lua/heartbeat-session-8.lua). */
export async function heartbeatSession(
  redis: RedisPort,
  keys: Keys,
  input: HeartbeatSessionInput,
): Promise<HeartbeatSessionResult> {
  const { sessionId, clientId } = input;
  const call = heartbeatSessionScriptCall(
    { ...sessionKeys(keys), queue: keys.queue(sessionId), drain: keys.drain(clientId) },
    {
      sessionId,
      clientId,
      headroom: input.headroom,
      draining: input.draining ? "1" : "0",
      probe: input.probe,
      leaseTtlMs: input.leaseTtlMs,
      hostnameAware: input.hostnameAware ? "1" : "0",
      sealedSecret: input.sealedSecret,
      accountTag: input.accountTag,
      legacyAccount: input.legacyAccount,
      acks: input.acks,
    },
  );
  const reply = (await runCall(redis, call)) as [string, string?, string?, string?, string[]?, string?];
  const [status, json = "", third = "", fourth = ""] = reply;
  if (status === "unknown") return { kind: "unknown" };
  if (status === "voided") return { kind: "voided", json, generation: third };
  if (status === "superseded") {
    const [, , , key, env, epoch] = reply as string[];
    return { kind: "superseded", json, generation: third, key: String(key), env: String(env), epoch: String(epoch) };
  }
  return { kind: "ok", json, drainDeadline: third, now: Number(fourth), messages: reply[4] ?? [] };
}
