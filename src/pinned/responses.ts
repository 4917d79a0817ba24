/** Header names of the worker contract and the fixed answers pinned gives. */

import { LEASE_UNHEALTHY, REFUSAL_HEADER } from "../contract/header-names.ts";

export { ATTESTATION_HEADER, EPOCH_HEADER, PROXY_SECRET_HEADER, REFUSAL_HEADER } from "../contract/header-names.ts";

export function detail(status: number, message: string, headers: Record<string, string> = {}): Response {
  return json(status, { detail: message }, headers);
}

export function json(status: number, body: unknown, headers: Record<string, string> = {}): Response {
  return new Response(JSON.stringify(body), {
    status,
    headers: { "content-type": "application/json", ...headers },
  });
}

export const invalidAttestation = (): Response => detail(403, "invalid attestation");
export const invalidProxySecret = (): Response => detail(403, "invalid proxy secret");
export const malformedEpoch = (): Response => detail(400, "malformed placement epoch");
export const staleEpoch = (): Response => detail(409, "stale placement epoch");
export const unknownNamespace = (): Response => detail(404, "unknown namespace");
export const notFound = (): Response => detail(404, "not found");
export const internalError = (): Response => detail(500, "internal error");

/** Why a request was refused; the refusal's detail says it, the header is always the same. */
export type RefusalReason =
  | "draining"
  | "lease-unhealthy"
  | "lease-lapsed"
  | "capacity"
  | "winding-down"
  | "evicted"
  | "epoch-ended";

const REFUSAL_DETAIL: Record<RefusalReason, string> = {
  draining: "worker draining",
  "lease-unhealthy": "lease unhealthy",
  "lease-lapsed": "lease lapsed",
  capacity: "instance limit reached",
  "winding-down": "instance winding down",
  evicted: "instance evicted",
  "epoch-ended": "placement epoch ended here",
};

/**
 * The in-band refusal Pinboard understands: it releases the placement and may re-place once.
 * Every reason carries `Pinned-Refusal: lease-unhealthy`, the one value Pinboard acts on.
 */
export function refusal(reason: RefusalReason): Response {
  return detail(503, REFUSAL_DETAIL[reason], { "Retry-After": "1", [REFUSAL_HEADER]: LEASE_UNHEALTHY });
}

/** A transient failure to bring an instance in (the durability store unreachable, a throwing constructor). */
export const activationFailed = (): Response => detail(503, "activation failed", { "Retry-After": "1" });

/** The instance's input queue is full (createWorker's maxQueuedEvents): no refusal header, it stays put. */
export const instanceOverloaded = (): Response => detail(503, "instance overloaded", { "Retry-After": "1" });

/** A storage write the answer followed failed: the instance was dropped and re-activates from storage. */
export const storageWriteFailed = (): Response => detail(500, "storage write failed");
