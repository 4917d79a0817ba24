import { signAttestation } from "../auth/attestation.ts";
import type { AccountClaim } from "./data-passport.ts";
import { forwardRequestHeaders } from "./headers.ts";
import type { Resolution } from "./resolver.ts";

export type ForwardOutcome =
  | { kind: "response"; response: Response }
  | { kind: "unreachable"; connected: boolean; reason: string }
  | { kind: "timeout" }
  /** The client went away first; a fresh placement is released, whether or not it connected. */
  | { kind: "aborted"; connected: false };

export interface ForwardInput {
  request: Request;
  /** `{ns}/{id}{rest}{query}` appended to the advertise URL. */
  pathAndQuery: string;
  peer: string;
  caller?: { from: string; depth: number };
  acct?: AccountClaim;
  upgrade?: string;
  /** The request body, or null for a body-less request (kept apart: a body streams once). */
  body: ReadableStream<Uint8Array> | null;
}

const CONNECT_ERRORS = /ECONNREFUSED|ENOTFOUND|EAI_AGAIN|EHOSTUNREACH|ENETUNREACH|ECONNRESET_BEFORE|UND_ERR_CONNECT_TIMEOUT|UND_ERR_SOCKET_CONNECT/;

/** True when a fetch failure happened before a TCP connection existed (nothing reached the worker). */
function neverConnected(err: unknown): boolean {
  const cause = (err as { cause?: { code?: string; message?: string } })?.cause;
  const text = `${cause?.code ?? ""} ${cause?.message ?? ""} ${err instanceof Error ? err.message : ""}`;
  return CONNECT_ERRORS.test(text) || /connection refused|could not connect|dns/i.test(text);
}

/**
 * The request headers of one forward to a placement's owner: the inbound set filtered
 * (forwardRequestHeaders), X-Forwarded-*, and a fresh Pinboard-Attestation signed with the
 * owner's secret plus Pinboard-Epoch. Shared by the fetch forward below and the Node entry's
 * WebSocket proxy, so both send exactly the same set.
 */
export async function attestedForwardHeaders(
  resolution: Resolution,
  input: Pick<ForwardInput, "request" | "peer" | "caller" | "acct" | "upgrade">,
  nowSeconds: number,
): Promise<Record<string, string>> {
  const attestation = await signAttestation(
    resolution.secret,
    {
      aud: resolution.sessionId,
      ...(input.caller ? { caller: input.caller.from, depth: input.caller.depth } : {}),
      ...(input.acct ? { acct: input.acct } : {}),
    },
    nowSeconds,
  );
  const url = new URL(input.request.url);
  return forwardRequestHeaders(input.request.headers, {
    peer: input.peer,
    attestation,
    epoch: resolution.epoch,
    host: url.host,
    proto: url.protocol.replace(/:$/, ""),
    ...(input.upgrade ? { upgrade: input.upgrade } : {}),
  });
}

/**
 * One attested forward to a placement's owner. Redirects are never followed; the timeout covers
 * the wait for response headers (a streaming body may then take as long as it needs); a client
 * that goes away aborts the upstream request.
 */
export async function forwardOnce(
  deps: { fetch: typeof fetch; forwardTimeoutMs: number; nowSeconds: () => number },
  resolution: Resolution,
  input: ForwardInput,
): Promise<ForwardOutcome> {
  const { request } = input;
  if (request.signal.aborted) return { kind: "aborted", connected: false };
  const headers = await attestedForwardHeaders(resolution, input, deps.nowSeconds());

  const controller = new AbortController();
  let timedOut = false;
  const timer = setTimeout(() => {
    timedOut = true;
    controller.abort();
  }, deps.forwardTimeoutMs);
  const onClientAbort = () => controller.abort();
  request.signal.addEventListener("abort", onClientAbort, { once: true });
  try {
    const response = await deps.fetch(`${resolution.advertiseUrl}${input.pathAndQuery}`, {
      method: request.method,
      headers,
      body: input.body,
      redirect: "manual",
      signal: controller.signal,
      ...(input.body ? { duplex: "half" } : {}),
    } as RequestInit);
    return { kind: "response", response };
  } catch (err) {
    if (timedOut) return { kind: "timeout" };
    if (request.signal.aborted) return { kind: "aborted", connected: false };
    return { kind: "unreachable", connected: !neverConnected(err), reason: err instanceof Error ? String(err.cause ?? err.message) : String(err) };
  } finally {
    clearTimeout(timer);
    request.signal.removeEventListener("abort", onClientAbort);
  }
}
