import type { ChallengePair } from "./challenge.ts";
import type { PinboardAnswer } from "./pinboard-client.ts";

/** The register fields that do not change between registrations. */
export interface RegistrationFields {
  clientId: string;
  secret: string;
  namespaces: string[];
  advertiseUrl(): string;
  hostname?: string;
  env?: string;
  envs?: Record<string, string>;
  takeover?: "wind_down" | "deny";
  /** Hostname-aware binding epoch, sent as `epoch`. */
  bindingEpoch?: number;
}

/** What a register says besides the fields that never change: the worker's state as it is now. */
export interface RegisterMoment {
  pair: ChallengePair;
  advertiseUrl: string;
  headroom: number;
  draining: boolean;
  /** The session a re-register reclaims from, with the instances still resident. */
  reclaim?: { prevSessionId: string; instances: Record<string, string[]> };
}

/** The body of POST /registry/register (the contract's field names; optional ones only when set). */
export function registerBody(fields: RegistrationFields, moment: RegisterMoment): Record<string, unknown> {
  return {
    clientId: fields.clientId,
    secret: fields.secret,
    namespaces: fields.namespaces,
    advertiseUrl: moment.advertiseUrl,
    headroom: moment.headroom,
    draining: moment.draining,
    challenge: moment.pair.challenge,
    challengeValue: moment.pair.challengeValue,
    ...(fields.hostname !== undefined ? { hostname: fields.hostname } : {}),
    ...(fields.env !== undefined ? { env: fields.env } : {}),
    ...(fields.envs !== undefined ? { envs: fields.envs } : {}),
    ...(fields.takeover !== undefined ? { takeover: fields.takeover } : {}),
    ...(fields.bindingEpoch !== undefined ? { epoch: fields.bindingEpoch } : {}),
    ...(moment.reclaim ?? {}),
  };
}

/** A register answer that names the new session. */
export function isRegistered(answer: PinboardAnswer): answer is PinboardAnswer & { body: { sessionId: string } } {
  return answer.status === 200 && typeof answer.body.sessionId === "string";
}
