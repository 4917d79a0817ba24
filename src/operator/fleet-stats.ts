import type { PinboardClaim } from "../auth/claims.ts";
import { attestationTarget, signAttestation } from "../contract/attestation.ts";
import { ATTESTATION_HEADER } from "../contract/header-names.ts";
import type { AppDeps } from "../deps.ts";
import { callWorker } from "../outbound/worker-call.ts";
import { WorkerUrlError, workerUrl } from "../outbound/worker-url.ts";
import { type VisibleWorker, visibleWorkers } from "./fleet-view.ts";

/** What this module uses of the app's dependencies. */
export type StatsDeps = Pick<AppDeps, "config" | "redis" | "keys" | "now" | "fetch" | "runtime">;

export const STATS_TIMEOUT_MS = 3000;
export const STATS_CONCURRENCY = 8;
const STATS_BODY_CAP = 1024 * 1024;

type StatsEntry = { sessionId: string; clientId: string; hostname: string | null } & (
  | { stats: Record<string, unknown> }
  | { error: "unreachable" }
);

/**
 * GET /registry/stats: each visible live worker's GET {advertiseUrl}/_pinned/stats, attested,
 * 3 s timeout, 8 at a time. `namespaces` keeps only keys the operator may see among the
 * worker's registered namespaces; `instances` keeps only items of those. A non-2xx, timeout or
 * non-object answer reports {"error":"unreachable"}.
 */
export async function fleetStats(deps: StatsDeps, claim: PinboardClaim): Promise<{ workers: StatsEntry[] }> {
  const { workers } = await visibleWorkers(deps, claim);
  const results: StatsEntry[] = new Array(workers.length);
  let next = 0;
  const lane = async () => {
    while (next < workers.length) {
      const i = next++;
      results[i] = await statsOf(deps, workers[i]!);
    }
  };
  await Promise.all(Array.from({ length: Math.min(STATS_CONCURRENCY, workers.length) }, lane));
  return { workers: results };
}

async function statsOf(deps: StatsDeps, { record, namespaces }: VisibleWorker): Promise<StatsEntry> {
  const head = {
    sessionId: record.sessionId,
    clientId: record.clientId,
    hostname: deps.config.hostnameAware ? record.hostname : null,
  };
  let url: string;
  try {
    url = workerUrl(record.advertiseUrl, ["_pinned", "stats"]);
  } catch (err) {
    if (!(err instanceof WorkerUrlError)) throw err;
    return { ...head, error: "unreachable" };
  }
  const attestation = await signAttestation(
    record.secret,
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
  if (stats === null || typeof stats !== "object" || Array.isArray(stats)) return { ...head, error: "unreachable" };
  return { ...head, stats: filterStats(stats as Record<string, unknown>, new Set(namespaces)) };
}

function filterStats(stats: Record<string, unknown>, visible: Set<string>): Record<string, unknown> {
  const out = { ...stats };
  if (stats.namespaces && typeof stats.namespaces === "object" && !Array.isArray(stats.namespaces)) {
    out.namespaces = Object.fromEntries(Object.entries(stats.namespaces).filter(([ns]) => visible.has(ns)));
  }
  if (Array.isArray(stats.instances)) {
    out.instances = stats.instances.filter(
      (item) => item !== null && typeof item === "object" && visible.has(String((item as { ns?: unknown }).ns)),
    );
  }
  return out;
}
