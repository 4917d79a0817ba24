import { describeNetworkError, type PinboardAnswer, PinboardCallError } from "./pinboard-client.ts";

/**
 * What a failed call to Pinboard most likely means and what to do about it. The hint goes after
 * Pinboard's own words, which stay exactly as sent: `register: 401 unauthorized from
 * http://…/registry/register — Pinboard does not accept the credential: …`.
 */

/** Where the worker reads the settings the hints name (createWorker's option, examples/worker.ts's variable). */
const PINBOARD_URL_SETTING = "the pinboardUrl option (PINBOARD_URL)";
const WORKER_CREDENTIAL =
  "with the pinboard:worker scope and a pinboard claim naming the namespaces (npm start prints one as " +
  "PINBOARD_WORKER_TOKEN)";

/** The error for a route's call that got `answer`, or no answer (null) because of `cause`. */
export function callFailure(
  call: { route: string; url: string; pinboardUrl: string },
  answer: PinboardAnswer | null,
  cause?: unknown,
  hint?: string,
): PinboardCallError {
  const { route, url, pinboardUrl } = call;
  if (answer === null) {
    return new PinboardCallError(route, null, {}, cause, url, hint ?? noAnswerHint(cause, pinboardUrl));
  }
  // Stryker disable next-line StringLiteral: no hint matches an error string that is "" or any other non-error text
  const error = typeof answer.body.error === "string" ? answer.body.error : "";
  const explained = hint ?? refusalHint(route, answer.status, error, pinboardUrl) ?? undefined;
  return new PinboardCallError(route, answer.status, answer.body, cause, url, explained);
}

/** Register's answer when Pinboard's challenge probe of the advertise URL failed (retried). */
export function isProbeFailure(answer: PinboardAnswer): boolean {
  return answer.status === 400 && answer.body.error === "registration probe failed";
}

/** Why no answer came, and what to check. */
export function noAnswerHint(cause: unknown, pinboardUrl: string): string {
  const why = describeNetworkError(cause);
  if (why === "ENOTFOUND" || why === "EAI_AGAIN") {
    return `the host ${hostOf(pinboardUrl)} of ${PINBOARD_URL_SETTING} does not resolve: check its spelling and this machine's DNS`;
  }
  if (why.startsWith("timed out")) {
    return `Pinboard at ${pinboardUrl} did not answer in time: is it overloaded, or does a firewall drop the traffic?`;
  }
  return (
    `cannot reach Pinboard at ${pinboardUrl}: is Pinboard running, and is ${PINBOARD_URL_SETTING} right ` +
    "(host, port, http:// or https://)?"
  );
}

/** What an answer other than 200 means, or null when Pinboard's words say it all. */
export function refusalHint(route: string, status: number, error: string, pinboardUrl: string): string | null {
  if (status === 404) return basePathHint(pinboardUrl);
  if (status >= 300 && status < 400) {
    return `${pinboardUrl} answers a redirect, which worker calls never follow: set ${PINBOARD_URL_SETTING} to the URL it redirects to (https:// instead of http://?)`;
  }
  if (status === 401) {
    return (
      "Pinboard does not accept the credential: it is malformed, expired, or signed with another key than " +
      "Pinboard's (PINBOARD_PASSPORT_SECRET or PINBOARD_PASSPORT_JWKS), or names another issuer or audience; " +
      `pass a fresh credential ${WORKER_CREDENTIAL}; a credential function can renew it before it expires`
    );
  }
  if (status === 403) return route === "register" ? registerForbiddenHint(error) : sessionForbiddenHint(error);
  if (status === 409 && error === "client belongs to another account") {
    return "another account registered this clientId: pick another with the clientId option (CLIENT_ID), or use that account's credential (after a change of Pinboard's PINBOARD_SECRETS_KEY or passport secret it clears within two leases)";
  }
  if (status === 503 && error === "not the serving fleet") {
    return "this Pinboard node is not serving (another fleet holds the license, or it is starting): retried until it serves";
  }
  if (status === 400) return badRequestHint(error);
  return null;
}

/**
 * A 404 from /registry/* means the path missed Pinboard's routes: outside its PINBOARD_BASE_PATH
 * (404 not found), or read as a namespace of the data plane (404 unknown namespace).
 */
function basePathHint(pinboardUrl: string): string {
  const path = pathOf(pinboardUrl);
  return (
    `the Pinboard URL ${pinboardUrl} probably misses or has an extra base path ` +
    `(${path ? `it has the path ${path}` : "it has no path"}): set ${PINBOARD_URL_SETTING} to Pinboard's origin ` +
    "plus its PINBOARD_BASE_PATH if it sets one, e.g. http://127.0.0.1:8787/pinboard"
  );
}

/** The claim field each of register's 403 strings is judged on (src/auth/claims.ts). */
const CLAIM_OF_REFUSAL: [prefix: string, claim: string][] = [
  ["namespace not allowed", "namespaces"],
  ["backend host not allowed", "allowedBackendHosts"],
  ["advertiseUrl port not allowed", "allowedPorts"],
  ["hostname not allowed", "hostnames"],
  ["env not allowed", "envs"],
];

function registerForbiddenHint(error: string): string {
  const claim = CLAIM_OF_REFUSAL.find(([prefix]) => error.startsWith(prefix))?.[1];
  if (claim) {
    return (
      `the credential's pinboard claim does not allow it (its ${claim}): register only what the claim allows, ` +
      `or get a credential whose ${claim} cover it`
    );
  }
  return (
    "the credential lacks the pinboard:worker scope every worker route (/registry/register, heartbeat, …) needs " +
    `(an operator credential has pinboard:operator), or its pinboard claim is malformed: pass a credential ${WORKER_CREDENTIAL}`
  );
}

function sessionForbiddenHint(error: string): string | null {
  if (error !== "forbidden") return null;
  return (
    "the credential's account differs from the one that registered this session, its claims no longer cover " +
    "the registration, or it lacks the pinboard:worker scope: keep a credential of the same account and claims"
  );
}

function badRequestHint(error: string): string | null {
  if (error.endsWith("requires hostname-aware mode")) {
    return (
      "Pinboard runs in single mode (PINBOARD_HOSTNAME_AWARE off): drop the hostname, env, envs, takeover " +
      "and bindingEpoch options, or turn hostname-aware mode on"
    );
  }
  if (error === "hostname is required in hostname-aware mode") {
    return "Pinboard runs in hostname-aware mode (PINBOARD_HOSTNAME_AWARE): set the hostname option";
  }
  if (error.startsWith("expected {") || error === "invalid json") {
    return "Pinboard does not understand the body: does this worker library's version match Pinboard's?";
  }
  return null;
}

/** A failure's log fields: what the caller counts, then `error`, the failure's message (its cause and fix). */
export function failureFields(
  context: Record<string, string | number>,
  failure: unknown,
): Record<string, string | number> {
  return { ...context, error: failure instanceof Error ? failure.message : String(failure) };
}

function hostOf(url: string): string {
  try {
    return new URL(url).host;
  } catch {
    return url;
  }
}

function pathOf(url: string): string {
  try {
    return new URL(url).pathname.replace(/\/+$/, "");
  } catch {
    return "";
  }
}
