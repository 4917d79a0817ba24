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
  const url = `${target.advertiseUrl}/_pinned/challenge?challenge=${encodeURIComponent(target.challenge)}`;
  const controller = new AbortController();
  const timer = setTimeout(() => controller.abort(), deps.timeoutMs);
  try {
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
    const text = await readCapped(response);
    if (text === null) {
      deps.log.warn("probe failed", { url: target.advertiseUrl, reason: "body missing or over 1 MiB" });
      return "fail";
    }
    let value: unknown;
    try {
      value = (JSON.parse(text) as { value?: unknown } | null)?.value;
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

async function readCapped(response: Response): Promise<string | null> {
  if (!response.body) return null;
  const reader = response.body.getReader();
  const chunks: Uint8Array[] = [];
  let size = 0;
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    size += value.byteLength;
    if (size > BODY_CAP) {
      await reader.cancel().catch(() => {});
      return null;
    }
    chunks.push(value);
  }
  if (size === 0) return null;
  const decoder = new TextDecoder();
  return chunks.map((c) => decoder.decode(c, { stream: true })).join("") + decoder.decode();
}
