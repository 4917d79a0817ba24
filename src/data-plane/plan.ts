import type { AppDeps } from "../deps/app-deps.ts";
import { badRequest, PinboardError } from "../errors/pinboard-error.ts";
import { type AffinityKey, affinityHash, clientAddress } from "../placement/affinity.ts";
import { hostnameBinding, requestHostname, SINGLE_BINDING } from "../placement/bindings.ts";
import { Refusal } from "../placement/refusal.ts";
import type { ResolveRequest } from "../placement/resolver.ts";
import { assertInCallerScope, type Caller, verifyCaller } from "./caller.ts";
import { type AccountClaim, dataPlanePassport } from "./data-passport.ts";
import type { DataPath } from "./data-path.ts";
import type { InboundRequest } from "./inbound.ts";

/** What this module uses of the app's dependencies. */
export type PlanDeps = Pick<
  AppDeps,
  "config" | "redis" | "keys" | "now" | "passport" | "fleet" | "metrics" | "secrets"
>;

/** Everything decided about a data-plane request before its first resolve. */
export interface ForwardPlan {
  path: DataPath;
  resolve: ResolveRequest;
  caller?: Caller;
  acct?: AccountClaim;
  peer: string;
  /** The peer is in PINBOARD_TRUSTED_PROXIES (its forwarding headers are believed and passed on). */
  trustedPeer: boolean;
}

/**
 * The checks before placement, in the protocol's order: the serving check, caller attestation (or
 * else data-plane passport), the Host header and binding lookup in hostname-aware mode, the
 * caller's scope, and the affinity preference.
 */
export function planForward(...args: Parameters<typeof plan>): Promise<ForwardPlan> {
  // Refusals decided before the script (not-serving, and the binding lookup's) count as
  // resolutions like the script's own; the placement loop counts those.
  return plan(...args).catch((err: unknown) => {
    if (err instanceof Refusal) args[0].metrics.resolution(err.outcome);
    throw err;
  });
}

async function plan(
  deps: PlanDeps,
  request: InboundRequest,
  path: DataPath,
  affinityKey: AffinityKey,
): Promise<ForwardPlan> {
  const { peer } = request;
  // The common request (a serving node, no caller, no data-plane rule, single mode) awaits
  // nothing before its resolve.
  if (!deps.fleet.servingNow()) {
    try {
      await deps.fleet.assertServing();
    } catch (err) {
      throw err instanceof PinboardError ? new Refusal("not-serving") : err;
    }
  }
  const verifying = verifyCaller(deps, request.headers);
  const caller = verifying === null ? undefined : await verifying;
  const passport = caller
    ? undefined
    : dataPlanePassport(deps, path.ns, request.headers.get("authorization") ?? undefined);
  const acct = passport === undefined ? undefined : await passport;

  let binding = SINGLE_BINDING;
  if (deps.config.hostnameAware) {
    // The request's authority: its Host, or an absolute-form target's own (RFC 9112 §3.2.2).
    const hostname = requestHostname(request.host || undefined);
    if (hostname === null) throw badRequest("missing Host header");
    binding = await hostnameBinding(deps, hostname, path.ns);
  }
  const { hostname } = binding;
  if (caller) assertInCallerScope(caller, { ns: path.ns, hostname, env: binding.env }, deps.config.hostnameAware);

  let affinity: number | undefined;
  if (!caller) {
    const client = {
      peer,
      address: clientAddress(peer, request.headers.get("x-forwarded-for"), deps.config.trustedProxies),
    };
    const key = affinityKey(request, client);
    if (key !== null) affinity = affinityHash(key);
  }

  return {
    path,
    peer,
    trustedPeer: deps.config.trustedProxies.includes(peer),
    ...(caller ? { caller } : {}),
    ...(acct ? { acct } : {}),
    resolve: {
      ns: path.ns,
      id: path.id,
      env: binding.env,
      hostname: binding.hostname,
      takeover: binding.takeover,
      ...(binding.quarantineUntil !== undefined ? { bindingQuarantineUntil: binding.quarantineUntil } : {}),
      ...(caller ? { callerSessionId: caller.record.sessionId } : {}),
      ...(affinity !== undefined ? { affinityHash: affinity } : {}),
    },
  };
}
