import { attestationTarget, signAttestation } from "../contract/attestation.ts";
import { ATTESTATION_HEADER, EPOCH_HEADER, PROXY_SECRET_HEADER } from "../contract/header-names.ts";
import type { AppDeps } from "../deps/app-deps.ts";
import { callWorker, failureReason } from "../outbound/worker-call.ts";
import { instanceUrl, WorkerUrlError } from "../outbound/worker-url.ts";
import type { Resolution } from "../placement/resolver.ts";
import type { RequestMeter } from "../redis/request-meter.ts";

/** What this module uses of the app's dependencies. */
export type InstanceCallsDeps = Pick<AppDeps, "config" | "now" | "fetch" | "runtime"> & {
  /** The pass's subrequest budget: each call draws one before it goes out (and throws when it is spent). */
  budget: RequestMeter;
};

export interface WorkerAnswer {
  /** The HTTP status, 0 when no answer came back. */
  status: number;
  /** The JSON body of a 2xx answer; null otherwise, or when it was empty, not JSON or over 64 KiB. */
  body: unknown;
  /** Set when no HTTP answer came back ("timeout", or the connection error). */
  error?: string;
  /** The worker refused the activation in-band (503 + Pinned-Refusal): the placement is to be released. */
  refused?: true;
}

const BODY_CAP = 64 * 1024;

/**
 * The sweeper's calls on an instance's owner: POST {advertiseUrl}{ns}/{id}/_wake (attested,
 * Pinboard-Epoch) and POST …/_alarm (attested, Pinboard-Proxy-Secret, Pinboard-Epoch), bounded
 * by the wake timeout. The attestation names the call: htm POST, htu the URL's path, the epoch.
 */
export async function callInstance(
  deps: InstanceCallsDeps,
  placement: Resolution,
  target: { ns: string; id: string; action: "_wake" | "_alarm" },
): Promise<WorkerAnswer> {
  let url: string;
  try {
    url = instanceUrl(placement.advertiseUrl, target.ns, target.id, target.action);
  } catch (err) {
    // An id or namespace no URL can carry (".", ".."): a failed call, retried and parked like one.
    if (!(err instanceof WorkerUrlError)) throw err;
    return { status: 0, body: null, error: err.message };
  }
  const claims = {
    aud: placement.sessionId,
    htm: "POST",
    htu: attestationTarget(url, placement.advertiseUrl),
    epoch: placement.epoch,
  };
  const headers: Record<string, string> = {
    [ATTESTATION_HEADER]: await signAttestation(
      placement.secret,
      claims,
      Math.floor(deps.now() / 1000),
      deps.runtime.signJws,
    ),
    [EPOCH_HEADER]: placement.epoch,
    Accept: "application/json",
  };
  if (target.action === "_alarm") headers[PROXY_SECRET_HEADER] = placement.secret;
  deps.budget.take();
  const outcome = await callWorker(deps.fetch, {
    url,
    method: "POST",
    headers,
    timeoutMs: deps.config.wakeTimeoutMs,
    maxBodyBytes: BODY_CAP,
  });
  if (outcome.kind !== "answered") return { status: 0, body: null, error: failureReason(outcome) };
  const body = outcome.body?.ok ? outcome.body.value : null;
  return outcome.refused ? { status: outcome.status, body, refused: true } : { status: outcome.status, body };
}
