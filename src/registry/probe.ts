import { PROXY_SECRET_HEADER } from "../contract/header-names.ts";
import type { Logger } from "../log/logger.ts";
import { callWorker, failureReason } from "../outbound/worker-call.ts";
import { WorkerUrlError, workerUrl } from "../outbound/worker-url.ts";

export type ProbeOutcome = "pass" | "mismatch" | "fail";

export interface ProbeDeps {
  fetch: typeof fetch;
  timeoutMs: number;
  log: Logger;
}

const BODY_CAP = 1024 * 1024;

/**
 * The challenge probe: GET {advertiseUrl}/_pinned/challenge?challenge=… with
 * Pinboard-Proxy-Secret. Pass on 200 {"value": challengeValue}; mismatch on a 2xx with another
 * value; fail on a non-2xx, a redirect (never followed), a timeout, a connection error, a body
 * over 1 MiB or no readable body. Details go to the log, never to the worker.
 */
export async function probeChallenge(
  deps: ProbeDeps,
  target: { advertiseUrl: string; secret: string; challenge: string; challengeValue: string },
): Promise<ProbeOutcome> {
  let url: string;
  try {
    url = workerUrl(target.advertiseUrl, ["_pinned", "challenge"], [["challenge", target.challenge]]);
  } catch (err) {
    // A challenge that is not well-formed UTF-16 (a lone surrogate), or an advertise URL the
    // builder refuses: a failed probe like any other, not a 500.
    if (!(err instanceof WorkerUrlError)) throw err;
    deps.log.warn("probe failed", { url: target.advertiseUrl, reason: err.message });
    return "fail";
  }
  const outcome = await callWorker(deps.fetch, {
    url,
    method: "GET",
    headers: { [PROXY_SECRET_HEADER]: target.secret, Accept: "application/json" },
    timeoutMs: deps.timeoutMs,
    maxBodyBytes: BODY_CAP,
  });
  if (outcome.kind !== "answered") {
    deps.log.warn("probe failed", { url: target.advertiseUrl, reason: failureReason(outcome) });
    return "fail";
  }
  const { status, body } = outcome;
  if (body === null) {
    deps.log.warn("probe failed", { url: target.advertiseUrl, status });
    return "fail";
  }
  if (!body.ok) {
    deps.log.warn("probe failed", {
      url: target.advertiseUrl,
      reason: body.problem === "not json" ? "body is not JSON" : "body missing or over 1 MiB",
    });
    return "fail";
  }
  if ((body.value as { value?: unknown } | null)?.value === target.challengeValue) return "pass";
  deps.log.warn("probe answered another value", { url: target.advertiseUrl });
  return "mismatch";
}
