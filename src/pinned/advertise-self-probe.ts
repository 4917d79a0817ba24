import { parseJsonObject } from "../contract/json-text.ts";
import { describeNetworkError } from "./pinboard-client.ts";
import { PROXY_SECRET_HEADER } from "./responses.ts";

/**
 * Register answered 400 registration probe failed: Pinboard could not get this worker's
 * challenge value from the advertise URL, and keeps the details in its own log. The worker probes
 * the same URL itself, as Pinboard did (GET {advertiseUrl}/_pinned/challenge with the secret), and
 * says what it found: nothing answers (the URL is wrong), this worker answers (so only Pinboard's
 * host cannot reach it), or something else answers (another process, a redirect, a wrong path).
 */

export interface SelfProbeTarget {
  advertiseUrl: string;
  secret: string;
  /** The pair register sent, still the one the challenge route answers. */
  challenge: string;
  challengeValue: string;
  pinboardUrl: string;
}

/** Pinboard's default PINBOARD_VERIFY_TIMEOUT_MS. */
export const SELF_PROBE_TIMEOUT_MS = 2500;
const BODY_SHOWN = 120;
const BODY_READ_CAP = 64 * 1024;
const ADVERTISE_URL_SETTING = "the advertiseUrl option (ADVERTISE_URL; default: the listen() URL)";

export async function diagnoseProbeFailure(
  target: SelfProbeTarget,
  timeoutMs = SELF_PROBE_TIMEOUT_MS,
): Promise<string> {
  const probed = `${target.advertiseUrl}/_pinned/challenge`;
  const lead = `Pinboard could not reach this worker at ${probed}`;
  const started = Date.now();
  let status: number;
  let location: string | null;
  let body: string;
  try {
    const response = await fetch(`${probed}?challenge=${encodeURIComponent(target.challenge)}`, {
      headers: { [PROXY_SECRET_HEADER]: target.secret, accept: "application/json" },
      redirect: "manual",
      signal: AbortSignal.timeout(timeoutMs),
    });
    status = response.status;
    location = response.headers.get("location");
    body = await readCapped(response, BODY_READ_CAP);
  } catch (err) {
    return (
      `${lead}; probing it from here: ${networkErrorDetail(err, timeoutMs)} — is ${ADVERTISE_URL_SETTING} ` +
      "right (host, port, scheme) and reachable from Pinboard?"
    );
  }
  const elapsedMs = Date.now() - started;
  if (status >= 300 && status < 400) {
    return `${lead}; probing it from here: it answers HTTP ${status} redirecting to ${location ?? "(no Location)"}, and Pinboard never follows redirects: advertise the final URL (${ADVERTISE_URL_SETTING})`;
  }
  const value = jsonField(body, "value");
  if (status === 200 && value === target.challengeValue) {
    return `${lead}; this worker answers there from here (in ${elapsedMs} ms), so Pinboard cannot reach it: ${unreachableFromPinboard(target)}`;
  }
  const answered = `HTTP ${status} ${oneLine(body).slice(0, BODY_SHOWN)}`.trimEnd();
  if (answeredByAnotherWorker(status, body, value)) {
    return `${lead}; probing it from here: another pinned worker answers there (${answered}), not this one: ${ADVERTISE_URL_SETTING} names another worker's host or port`;
  }
  return `${lead}; probing it from here: something else answers there (${answered}), not this worker's challenge route: check the host, port and path of ${ADVERTISE_URL_SETTING}`;
}

/** The fix when this worker answers its advertise URL but Pinboard does not get through. */
function unreachableFromPinboard(target: SelfProbeTarget): string {
  const advertised = hostnameOf(target.advertiseUrl);
  const pinboard = hostnameOf(target.pinboardUrl);
  const loopbackNote =
    isLoopback(advertised) && !isLoopback(pinboard)
      ? `${advertised} is a loopback address but Pinboard is at ${pinboard}; `
      : "";
  return (
    `${loopbackNote}the advertise URL must be reachable from Pinboard's host (not 127.0.0.1 or localhost ` +
    "when Pinboard runs on another machine or in a container): check firewalls and container networks, " +
    `and that the worker answers within Pinboard's PINBOARD_VERIFY_TIMEOUT_MS (default ${SELF_PROBE_TIMEOUT_MS} ms)`
  );
}

/** pinned's own refusals of a challenge it does not hold (routes.ts), or another challenge's value. */
function answeredByAnotherWorker(status: number, body: string, value: unknown): boolean {
  const detail = jsonField(body, "detail");
  return (
    (status === 200 && typeof value === "string") ||
    (status === 404 && detail === "unknown challenge") ||
    (status === 403 && detail === "invalid proxy secret")
  );
}

/** The system error as Node words it (`connect ECONNREFUSED 127.0.0.1:9999`), else the short cause. */
function networkErrorDetail(err: unknown, timeoutMs: number): string {
  let e: unknown = err;
  for (let depth = 0; depth < 5 && e && typeof e === "object"; depth++) {
    const x = e as { name?: unknown; code?: unknown; message?: unknown; cause?: unknown; errors?: unknown };
    if (x.name === "TimeoutError") return `no answer within ${timeoutMs} ms`;
    if (typeof x.code === "string" && typeof x.message === "string" && x.message.includes(x.code)) return x.message;
    e = x.cause ?? (Array.isArray(x.errors) ? x.errors[0] : undefined);
  }
  return describeNetworkError(err);
}

/** The body's first `cap` bytes or so, as text: whatever answers there, it is only shown. */
async function readCapped(response: Response, cap: number): Promise<string> {
  const reader = response.body?.getReader();
  if (!reader) return "";
  const decoder = new TextDecoder();
  let text = "";
  for (let read = 0; read < cap; ) {
    const { done, value } = await reader.read();
    if (done) return text + decoder.decode();
    read += value.byteLength;
    text += decoder.decode(value, { stream: true });
  }
  await reader.cancel().catch(() => {});
  return text;
}

function jsonField(text: string, field: string): unknown {
  return parseJsonObject(text)?.[field];
}

function oneLine(text: string): string {
  return text.replace(/\s+/g, " ").trim();
}

function hostnameOf(url: string): string {
  try {
    return new URL(url).hostname;
  } catch {
    return "";
  }
}

function isLoopback(hostname: string): boolean {
  return hostname === "localhost" || hostname === "[::1]" || hostname.startsWith("127.");
}
