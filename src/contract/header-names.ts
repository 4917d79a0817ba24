/**
 * Header names of the worker contract, as Pinboard sends them and the worker library reads them
 * (HTTP header names are case-insensitive; the lowercase forms are for raw Node header objects).
 */

/** The HS256 JWS on every forward, `_wake`, `_alarm` and `_pinned/stats` call. */
export const ATTESTATION_HEADER = "Pinboard-Attestation";
/** The placement epoch of the forward: digits, compared as a decimal string. */
export const EPOCH_HEADER = "Pinboard-Epoch";
/** The worker's own secret, sent on the challenge probe and `_alarm`. */
export const PROXY_SECRET_HEADER = "Pinboard-Proxy-Secret";
/** A worker's in-band refusal of an activation; Pinboard acts on the value `lease-unhealthy`. */
export const REFUSAL_HEADER = "Pinned-Refusal";
export const LEASE_UNHEALTHY = "lease-unhealthy";

/** Caller attestation on a data-plane request made by an instance: `{ns}/{id}` of the caller. */
export const FROM_HEADER = "Pinboard-From";
export const SESSION_HEADER = "Pinboard-Session";
export const SESSION_SECRET_HEADER = "Pinboard-Session-Secret";
export const SUBREQUEST_DEPTH_HEADER = "Pinboard-Subrequest-Depth";

/** True for a worker's answer that refuses the activation: 503 with `Pinned-Refusal: lease-unhealthy`. */
export function isLeaseRefusal(status: number, refusal: string | null | undefined): boolean {
  // Stryker disable next-line StringLiteral: any text in place of "" for an absent header is not lease-unhealthy either
  return status === 503 && (refusal ?? "").toLowerCase() === LEASE_UNHEALTHY;
}
