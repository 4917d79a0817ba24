import { z } from "zod";

/**
 * The `pinboard` claim of a Passport credential and the pure checks that judge a request
 * against it. Each check returns null when the request is allowed, or the exact 403
 * error string when it is not.
 */

const WILDCARD = "*";

/** "*" or a registered namespace: "/" plus one non-empty path segment. */
const namespaceEntry = z.string().regex(/^(\*|\/[^/\s]+)$/, 'expected "*" or a namespace such as /threads');
const name = z.string().min(1);

export const pinboardClaimSchema = z.object({
  namespaces: z.array(namespaceEntry).min(1),
  /** Judged only for worker registrations; absent, no advertise URL is allowed. */
  allowedBackendHosts: z.array(name).optional(),
  allowedPorts: z.array(z.number().int().min(1).max(65535)).optional(),
  hostnames: z.array(name).optional(),
  envs: z.array(name).optional(),
});

export type PinboardClaim = z.infer<typeof pinboardClaimSchema>;

/** Parses an untrusted `pinboard` claim; null when it is missing or of the wrong shape. */
export function parsePinboardClaim(value: unknown): PinboardClaim | null {
  const parsed = pinboardClaimSchema.safeParse(value);
  return parsed.success ? parsed.data : null;
}

function allowsNamespace(claim: PinboardClaim, ns: string): boolean {
  return claim.namespaces.includes(WILDCARD) || claim.namespaces.includes(ns);
}

/** Case-insensitive membership with "*" allowing every value. */
function allowsName(list: readonly string[], value: string): boolean {
  const wanted = value.toLowerCase();
  return list.some((entry) => entry === WILDCARD || entry.toLowerCase() === wanted);
}

/** IPv6 hosts: URL.hostname keeps the brackets ("[::1]"), a claim may be written either way. */
function bare(host: string): string {
  return host.startsWith("[") && host.endsWith("]") ? host.slice(1, -1) : host;
}

export function checkNamespace(claim: PinboardClaim, ns: string): string | null {
  return allowsNamespace(claim, ns) ? null : `namespace not allowed: ${ns}`;
}

/**
 * The advertise URL's host against allowedBackendHosts, then its port against allowedPorts. A
 * claim without allowedBackendHosts (an operator's need not carry it) allows no backend host.
 */
export function checkBackend(claim: PinboardClaim, advertiseUrl: URL): string | null {
  const host = advertiseUrl.hostname;
  const hostAllowed = allowsName((claim.allowedBackendHosts ?? []).map(bare), bare(host));
  if (!hostAllowed) return `backend host not allowed: ${host}`;
  if (claim.allowedPorts !== undefined) {
    const port = effectivePort(advertiseUrl);
    if (!claim.allowedPorts.includes(port)) return `advertiseUrl port not allowed: ${port}`;
  }
  return null;
}

/** The port a client connects to: the explicit one, else the scheme's default. */
export function effectivePort(url: URL): number {
  if (url.port !== "") return Number(url.port);
  return url.protocol === "https:" || url.protocol === "wss:" ? 443 : 80;
}

export function checkHostname(claim: PinboardClaim, hostname: string): string | null {
  if (claim.hostnames === undefined || allowsName(claim.hostnames, hostname)) return null;
  return `hostname not allowed: ${hostname}`;
}

export function checkEnv(claim: PinboardClaim, env: string): string | null {
  if (claim.envs === undefined || allowsName(claim.envs, env)) return null;
  return `env not allowed: ${env}`;
}

/** True when the claim allows every one of the namespaces (for records judged as a whole). */
export function coversNamespaces(claim: PinboardClaim, namespaces: readonly string[]): boolean {
  return namespaces.every((ns) => allowsNamespace(claim, ns));
}

/** The namespaces the claim allows, in their original order (read routes filter by it). */
export function filterNamespaces(claim: PinboardClaim, namespaces: readonly string[]): string[] {
  return namespaces.filter((ns) => allowsNamespace(claim, ns));
}

/** "*" in namespaces and no hostname or env restriction: the policy /metrics requires. */
export function isUnrestricted(claim: PinboardClaim): boolean {
  const open = (list: readonly string[] | undefined) => list === undefined || list.includes(WILDCARD);
  return claim.namespaces.includes(WILDCARD) && open(claim.hostnames) && open(claim.envs);
}
