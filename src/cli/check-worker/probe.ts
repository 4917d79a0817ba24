import { PROXY_SECRET_HEADER } from "../../contract/header-names.ts";
import { workerUrl } from "../../outbound/worker-url.ts";
import { shown } from "./report.ts";

/** The probe's timeout: PINBOARD_VERIFY_TIMEOUT_MS's default. */
export const PROBE_TIMEOUT_MS = 2500;
const BODY_CAP = 1024 * 1024;

export interface ProbeResult {
  challenge: string;
  /** As Pinboard judges it: pass on 200 {"value": challengeValue}, mismatch on another value, fail otherwise. */
  outcome: "pass" | "mismatch" | "fail";
  /** What came back, for a report line. */
  got: string;
}

/**
 * The challenge probe as Pinboard sends it (src/registry/probe.ts): GET
 * {advertiseUrl}/_pinned/challenge?challenge=… with Pinboard-Proxy-Secret, redirects not
 * followed, 2.5 s, a body cap of 1 MiB; what came back is kept for the report.
 */
export async function probeChallenge(target: {
  advertiseUrl: string;
  secret: string;
  challenge: string;
  value: string;
}): Promise<ProbeResult> {
  const result = (outcome: ProbeResult["outcome"], got: string): ProbeResult => ({
    challenge: target.challenge,
    outcome,
    got,
  });
  let url: string;
  try {
    url = workerUrl(target.advertiseUrl, ["_pinned", "challenge"], [["challenge", target.challenge]]);
  } catch (err) {
    return result("fail", `no probe: ${shown(err instanceof Error ? err.message : String(err))}`);
  }
  try {
    const response = await fetch(url, {
      headers: { [PROXY_SECRET_HEADER]: target.secret, Accept: "application/json" },
      redirect: "manual",
      signal: AbortSignal.timeout(PROBE_TIMEOUT_MS),
    });
    const bytes = new Uint8Array(await response.arrayBuffer());
    const text = new TextDecoder().decode(bytes);
    const got = `${response.status} ${shown(text)}`;
    if (response.status < 200 || response.status > 299 || bytes.byteLength > BODY_CAP) return result("fail", got);
    let value: unknown;
    try {
      value = (JSON.parse(text) as { value?: unknown } | null)?.value;
    } catch {
      return result("fail", got);
    }
    return result(value === target.value ? "pass" : "mismatch", got);
  } catch (err) {
    return result("fail", `no answer (${shown(err instanceof Error ? err.message : String(err))})`);
  }
}
