import { UnreadableSecretError } from "../auth/worker-secrets.ts";
import { attestationTarget, signAttestation } from "../contract/attestation.ts";
import { ATTESTATION_HEADER } from "../contract/header-names.ts";
import type { AppDeps } from "../deps/app-deps.ts";
import { callWorker } from "../outbound/worker-call.ts";
import { WorkerUrlError, workerUrl } from "../outbound/worker-url.ts";
import type { WorkerRecord } from "../registry/record.ts";

/** What this module uses of the app's dependencies. */
export type WorkerStatsDeps = Pick<AppDeps, "now" | "fetch" | "runtime" | "secrets">;

export const STATS_TIMEOUT_MS = 3000;
const STATS_BODY_CAP = 1024 * 1024;

/**
 * One worker's GET {advertiseUrl}/_pinned/stats, attested for its session, with a 3 s timeout:
 * the JSON object it answered, unfiltered, or null when it is unreachable (a bad advertise URL,
 * a non-2xx answer, a timeout, a body that is not a JSON object). The operator routes filter it
 * to what the credential may see (fleet-stats.ts, placement-story.ts).
 */
export async function workerStats(
  deps: WorkerStatsDeps,
  record: WorkerRecord,
): Promise<Record<string, unknown> | null> {
  let url: string;
  try {
    url = workerUrl(record.advertiseUrl, ["_pinned", "stats"]);
  } catch (err) {
    if (!(err instanceof WorkerUrlError)) throw err;
    return null;
  }
  let secret: string;
  try {
    secret = await deps.secrets.open(record.sessionId, record.secret);
  } catch (err) {
    // Logged by open; to the operator the worker is as unreachable as one that did not answer.
    if (!(err instanceof UnreadableSecretError)) throw err;
    return null;
  }
  const attestation = await signAttestation(
    secret,
    { aud: record.sessionId, htm: "GET", htu: attestationTarget(url, record.advertiseUrl) },
    Math.floor(deps.now() / 1000),
    deps.runtime.signJws,
  );
  const outcome = await callWorker(deps.fetch, {
    url,
    method: "GET",
    headers: { [ATTESTATION_HEADER]: attestation, Accept: "application/json" },
    timeoutMs: STATS_TIMEOUT_MS,
    maxBodyBytes: STATS_BODY_CAP,
  });
  const stats = outcome.kind === "answered" && outcome.body?.ok ? outcome.body.value : null;
  if (stats === null || typeof stats !== "object" || Array.isArray(stats)) return null;
  return stats as Record<string, unknown>;
}

/** The items of a stats answer's `instances` list (an empty list when it has none). */
export function statsInstances(stats: Record<string, unknown>): Array<Record<string, unknown>> {
  if (!Array.isArray(stats.instances)) return [];
  return stats.instances.filter(
    (item): item is Record<string, unknown> => item !== null && typeof item === "object" && !Array.isArray(item),
  );
}
