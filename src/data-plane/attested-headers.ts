import { type SyncJwsHs256, signAttestation } from "../contract/attestation.ts";
import type { Resolution } from "../placement/resolver.ts";
import { forwardRequestHeaders } from "./header-hygiene.ts";
import type { InboundRequest } from "./inbound.ts";
import type { ForwardPlan } from "./plan.ts";

/**
 * The request target of a forward relative to the owner's advertise URL, as the placement loop
 * sends it (its `pathAndQuery`): `{ns}/{id}{rest}{search}`, the path as the URL parser read it.
 */
export function forwardTarget(plan: Pick<ForwardPlan, "path">, request: Pick<InboundRequest, "search">): string {
  const { path } = plan;
  return `${path.ns}/${path.id}${path.rest}${request.search}`;
}

/**
 * The request headers of one forward to a placement's owner, for every transport and both paths
 * (HTTP and upgrades), so all send exactly the same set: the inbound set filtered
 * (forwardRequestHeaders), X-Forwarded-*, and a fresh Pinboard-Attestation signed with the
 * owner's secret plus Pinboard-Epoch. The attestation names this forward: its method (htm), its
 * target (htu, forwardTarget) and its epoch, so it authorises nothing else on the worker.
 */
export async function attestedForwardHeaders(
  resolution: Resolution,
  plan: Pick<ForwardPlan, "path" | "peer" | "trustedPeer" | "caller" | "acct">,
  request: Pick<InboundRequest, "method" | "search" | "headers" | "host" | "proto" | "upgrade" | "edge">,
  nowSeconds: number,
  jws?: SyncJwsHs256,
): Promise<Record<string, string>> {
  const attestation = await signAttestation(
    resolution.secret,
    {
      aud: resolution.sessionId,
      htm: request.method,
      htu: forwardTarget(plan, request),
      epoch: resolution.epoch,
      ...(plan.caller ? { caller: plan.caller.from, depth: plan.caller.depth } : {}),
      ...(plan.acct ? { acct: plan.acct } : {}),
    },
    nowSeconds,
    jws,
  );
  return forwardRequestHeaders(request.headers, {
    peer: plan.peer,
    trustedPeer: plan.trustedPeer,
    ...(request.edge ? { edge: request.edge } : {}),
    attestation,
    epoch: resolution.epoch,
    ...(request.host !== "" ? { host: request.host } : {}),
    proto: request.proto,
    ...(request.upgrade ? { upgrade: "websocket" } : {}),
  });
}
