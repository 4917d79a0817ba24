import { signAttestation } from "../auth/attestation.ts";
import type { AppDeps } from "../deps.ts";
import { readCapped } from "../http/read-capped.ts";
import type { Resolution } from "../data-plane/resolver.ts";

export interface WorkerAnswer {
  status: number;
  body: unknown;
  /** Set when no HTTP answer came back (connection error, timeout). */
  error?: string;
}

/**
 * The sweeper's calls on an instance's owner: POST {advertiseUrl}{ns}/{id}/_wake (attested,
 * Pinboard-Epoch) and POST …/_alarm (attested, Pinboard-Proxy-Secret, Pinboard-Epoch). Redirects
 * are never followed; the wake timeout bounds each call.
 */
export async function callInstance(
  deps: AppDeps,
  placement: Resolution,
  target: { ns: string; id: string; action: "_wake" | "_alarm" },
): Promise<WorkerAnswer> {
  const headers: Record<string, string> = {
    "Pinboard-Attestation": await signAttestation(placement.secret, { aud: placement.sessionId }, Math.floor(deps.now() / 1000)),
    "Pinboard-Epoch": placement.epoch,
    Accept: "application/json",
  };
  if (target.action === "_alarm") headers["Pinboard-Proxy-Secret"] = placement.secret;
  const controller = new AbortController();
  const timer = setTimeout(() => controller.abort(), deps.config.wakeTimeoutMs);
  try {
    const response = await deps.fetch(`${placement.advertiseUrl}${target.ns}/${target.id}/${target.action}`, {
      method: "POST",
      headers,
      redirect: "manual",
      signal: controller.signal,
    });
    const bytes = await readCapped(response.body, 64 * 1024);
    let body: unknown = null;
    try {
      body = bytes && bytes.byteLength ? JSON.parse(new TextDecoder().decode(bytes)) : null;
    } catch {
      body = null;
    }
    return { status: response.status, body };
  } catch (err) {
    return { status: 0, body: null, error: controller.signal.aborted ? "timeout" : err instanceof Error ? err.message : String(err) };
  } finally {
    clearTimeout(timer);
  }
}
