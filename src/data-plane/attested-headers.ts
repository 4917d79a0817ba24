import { signAttestation } from "../contract/attestation.ts";
import { forwardRequestHeaders } from "./headers.ts";
import type { InboundRequest } from "./inbound.ts";
import type { ForwardPlan } from "./plan.ts";
import type { Resolution } from "./resolver.ts";

/**
 * The request headers of one forward to a placement's owner, for every transport and both paths
 * (HTTP and upgrades), so all send exactly the same set: the inbound set filtered
 * (forwardRequestHeaders), X-Forwarded-*, and a fresh Pinboard-Attestation signed with the
 * owner's secret (cached per owner and second in signAttestation) plus Pinboard-Epoch.
 */
export async function attestedForwardHeaders(
  resolution: Resolution,
  plan: Pick<ForwardPlan, "peer" | "trustedPeer" | "caller" | "acct">,
  request: Pick<InboundRequest, "headers" | "host" | "proto" | "upgrade">,
  nowSeconds: number,
): Promise<Record<string, string>> {
  const attestation = await signAttestation(
    resolution.secret,
    {
      aud: resolution.sessionId,
      ...(plan.caller ? { caller: plan.caller.from, depth: plan.caller.depth } : {}),
      ...(plan.acct ? { acct: plan.acct } : {}),
    },
    nowSeconds,
  );
  return forwardRequestHeaders(request.headers, {
    peer: plan.peer,
    trustedPeer: plan.trustedPeer,
    attestation,
    epoch: resolution.epoch,
    ...(request.host !== "" ? { host: request.host } : {}),
    proto: request.proto,
    ...(request.upgrade ? { upgrade: "websocket" } : {}),
  });
}
