import { signAttestation } from "../auth/attestation.ts";
import type { AccountClaim } from "./data-passport.ts";
import { forwardRequestHeaders } from "./headers.ts";
import type { Resolution } from "./resolver.ts";
import type { CallWorker, ClientLink } from "./worker-call.ts";

export type ForwardOutcome =
  | { kind: "response"; response: Response }
  | { kind: "unreachable"; connected: boolean; reason: string }
  | { kind: "timeout" }
  /** The client went away first; a fresh placement is released, whether or not it connected. */
  | { kind: "aborted"; connected: false };

export interface ForwardInput {
  request: Request;
  /** The request's URL (ForwardPlan.url). */
  url: URL;
  /** Whether the client is still there (the forward ends when it goes). */
  client: ClientLink;
  /** `{ns}/{id}{rest}{query}` appended to the advertise URL. */
  pathAndQuery: string;
  peer: string;
  /** The peer is a trusted proxy (ForwardPlan.trustedPeer). */
  trustedPeer: boolean;
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
  input: Pick<ForwardInput, "request" | "url" | "peer" | "trustedPeer" | "caller" | "acct" | "upgrade">,
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
  return forwardRequestHeaders(input.request.headers, {
    peer: input.peer,
    trustedPeer: input.trustedPeer,
    attestation,
    epoch: resolution.epoch,
    host: input.url.host,
    proto: input.url.protocol.replace(/:$/, ""),
    ...(input.upgrade ? { upgrade: input.upgrade } : {}),
  });
}

/**
 * One attested forward to a placement's owner. Redirects are never followed; the timeout covers
 * the wait for the answer (a streaming body may then take as long as it needs); a client that
 * goes away first ends the call to the worker (worker-call.ts).
 */
export async function forwardOnce(
  deps: { callWorker: CallWorker; forwardTimeoutMs: number; nowSeconds: () => number },
  resolution: Resolution,
  input: ForwardInput,
): Promise<ForwardOutcome> {
  const { request, client } = input;
  if (client.gone) return { kind: "aborted", connected: false };
  const headers = await attestedForwardHeaders(resolution, input, deps.nowSeconds());
  const result = await deps.callWorker({
    url: `${resolution.advertiseUrl}${input.pathAndQuery}`,
    init: {
      method: request.method,
      headers,
      body: input.body,
      redirect: "manual",
      ...(input.body ? { duplex: "half" } : {}),
    } as RequestInit,
    timeoutMs: deps.forwardTimeoutMs,
    client,
  });
  switch (result.kind) {
    case "response":
    case "timeout":
      return result;
    case "aborted":
      return { kind: "aborted", connected: false };
    case "failed": {
      const err = result.error;
      return { kind: "unreachable", connected: !neverConnected(err), reason: err instanceof Error ? String(err.cause ?? err.message) : String(err) };
    }
  }
}
