import { readCapped } from "../http/read-capped.ts";
import type { Logger } from "../log.ts";

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
  const controller = new AbortController();
  const timer = setTimeout(() => controller.abort(), deps.timeoutMs);
  try {
    // Inside the try: a challenge that is not well-formed UTF-16 (a lone surrogate) makes
    // encodeURIComponent throw, and that is a failed probe like any other, not a 500.
    const url = `${target.advertiseUrl}/_pinned/challenge?challenge=${encodeURIComponent(target.challenge)}`;
    const response = await deps.fetch(url, {
      method: "GET",
      headers: { "Pinboard-Proxy-Secret": target.secret, Accept: "application/json" },
      redirect: "manual",
      signal: controller.signal,
    });
    if (response.status < 200 || response.status > 299) {
      await response.body?.cancel().catch(() => {});
      deps.log.warn("probe failed", { url: target.advertiseUrl, status: response.status });
      return "fail";
    }
    const bytes = response.body ? await readCapped(response.body, BODY_CAP) : null;
    if (bytes === null || bytes.byteLength === 0) {
      deps.log.warn("probe failed", { url: target.advertiseUrl, reason: "body missing or over 1 MiB" });
      return "fail";
    }
    let value: unknown;
    try {
      value = (JSON.parse(new TextDecoder().decode(bytes)) as { value?: unknown } | null)?.value;
    } catch {
      deps.log.warn("probe failed", { url: target.advertiseUrl, reason: "body is not JSON" });
      return "fail";
    }
    if (value === target.challengeValue) return "pass";
    deps.log.warn("probe answered another value", { url: target.advertiseUrl });
    return "mismatch";
  } catch (err) {
    deps.log.warn("probe failed", {
      url: target.advertiseUrl,
      reason: controller.signal.aborted ? "timeout" : err instanceof Error ? err.message : String(err),
    });
    return "fail";
  } finally {
    clearTimeout(timer);
  }
}
