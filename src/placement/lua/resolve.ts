import type { Keys } from "../../redis/keys.ts";
import { runCall } from "../../redis/lua/run-call.ts";
import type { RedisPort, ScriptCall } from "../../redis/port.ts";
import { resolveScriptCall } from "./scripts.generated.ts";

export interface ResolveInput {
  bucket: number;
  env: string;
  ns: string;
  id: string;
  /** The request's hostname, "" in single mode. */
  hostname: string;
  /** The env's takeover, "" in single mode. */
  takeover: "" | "wind_down" | "deny";
  exclude?: string;
  /** The attested caller's sessionId. */
  callerSessionId?: string;
  /** uint32; undefined skips key affinity. */
  affinityHash?: number;
  bindingQuarantineUntil?: number;
  leaseTtlMs: number;
  balanceFactor: number;
  /** Seed of the script's load-balancing draws, 1 … 2^31 − 2. */
  seed: number;
}

/** The placement's owner as a resolve found or chose it. */
export interface ResolvedOwner {
  sessionId: string;
  epoch: string;
  advertiseUrl: string;
  secret: string;
  /** True when this resolve minted the placement (release it if the forward never connects). */
  fresh: boolean;
  /** The overwritten marker's epoch, "" when the id is not overwritten-listed. */
  overwritten: string;
  /** A wind-down expiry that survived the previous owner (ms), "" when none. */
  survivingWindDown: string;
  ownerHostname: string;
}

export type ResolveResult =
  | ({ kind: "forward" } & ResolvedOwner)
  | {
      kind: "refuse";
      outcome: string;
      remainingMs: number;
      /** The takeover fence this resolve just set (deadlineAt in Redis-clock ms). */
      fence?: { ownerSessionId: string; remainingMs: number; deadlineAt: number };
    };

/** The placement decision for one (env, namespace, id), atomic in the id's bucket (lua/resolve-11.lua). */
export function resolveCall(keys: Keys, input: ResolveInput): ScriptCall {
  const { bucket, env, ns, hostname } = input;
  return resolveScriptCall(
    {
      placements: keys.placements(bucket, env, ns),
      nsList: keys.nsWorkers(bucket, hostname, ns),
      workers: keys.workers(bucket),
      bootTime: keys.bootTime(bucket),
      epoch: keys.epoch(bucket),
      overwritten: keys.overwritten(bucket),
      spaces: keys.spaces(bucket),
      ejected: keys.ejected(bucket),
      nsExpiries: keys.nsExpiries(bucket, hostname, ns),
      nsSummary: keys.nsSummary(bucket, hostname, ns),
      spent: keys.spent(bucket),
    },
    {
      id: input.id,
      leaseTtlMs: input.leaseTtlMs,
      hostname,
      takeover: input.takeover,
      exclude: input.exclude ?? "",
      callerSessionId: input.callerSessionId ?? "",
      affinityHash: input.affinityHash === undefined ? "" : input.affinityHash,
      balanceFactor: input.balanceFactor,
      bindingQuarantineUntil: input.bindingQuarantineUntil ?? "",
      space: `${env}\n${ns}`,
      seed: input.seed,
    },
  );
}

export async function resolve(redis: RedisPort, keys: Keys, input: ResolveInput): Promise<ResolveResult> {
  return parseResolve((await runCall(redis, resolveCall(keys, input))) as string[]);
}

export function parseResolve(reply: string[]): ResolveResult {
  if (reply[0] === "refuse") {
    return {
      kind: "refuse",
      outcome: reply[1]!,
      remainingMs: Number(reply[2] ?? 0),
      ...(reply[4] === "1"
        ? { fence: { ownerSessionId: reply[3]!, remainingMs: Number(reply[2]), deadlineAt: Number(reply[5]) } }
        : {}),
    };
  }
  const [, sessionId, epoch, advertiseUrl, secret, fresh, overwritten, survivingWindDown, ownerHostname] = reply;
  return {
    kind: "forward",
    sessionId: sessionId!,
    epoch: epoch!,
    advertiseUrl: advertiseUrl!,
    secret: secret!,
    fresh: fresh === "1",
    overwritten: overwritten ?? "",
    survivingWindDown: survivingWindDown ?? "",
    ownerHostname: ownerHostname ?? "",
  };
}
