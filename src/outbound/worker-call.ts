import { isLeaseRefusal, REFUSAL_HEADER } from "../contract/header-names.ts";
import { readCapped } from "../http/read-capped.ts";
import { type TimedOut, type Unreachable, unreachableFetch } from "./failures.ts";

/**
 * One request-response call from Pinboard to a worker, with a JSON answer: the challenge probe,
 * `_pinned/stats`, and the sweeper's `_wake` and `_alarm`. (Forwards stream and go through the
 * data plane's transports, which share ./failures.ts.) Redirects are never followed, the timeout
 * bounds the whole call (answer and body), and the body of a 2xx answer is read up to a cap;
 * the body of any other answer is discarded unread.
 */
export interface WorkerCall {
  url: string;
  method: "GET" | "POST";
  headers: Record<string, string>;
  timeoutMs: number;
  /** The most bytes of a 2xx body read; a longer body is `too large`, the rest never read. */
  maxBodyBytes: number;
}

/** What the body of a 2xx answer came to. */
export type JsonBody = { ok: true; value: unknown } | { ok: false; problem: "empty" | "too large" | "not json" };

export type WorkerCallOutcome =
  /**
   * An HTTP answer. `body` is read for a 2xx status only (null otherwise); `refused` marks the
   * worker's in-band refusal of the activation (503 + Pinned-Refusal: lease-unhealthy).
   */
  { kind: "answered"; status: number; body: JsonBody | null; refused: boolean } | Unreachable | TimedOut;

export async function callWorker(fetcher: typeof fetch, call: WorkerCall): Promise<WorkerCallOutcome> {
  const controller = new AbortController();
  const timer = setTimeout(() => controller.abort(), call.timeoutMs);
  try {
    const response = await fetcher(call.url, {
      method: call.method,
      headers: call.headers,
      redirect: "manual",
      signal: controller.signal,
    });
    if (response.status < 200 || response.status > 299) {
      await response.body?.cancel().catch(() => {});
      const refused = isLeaseRefusal(response.status, response.headers.get(REFUSAL_HEADER));
      return { kind: "answered", status: response.status, body: null, refused };
    }
    return {
      kind: "answered",
      status: response.status,
      body: parseJson(await readCapped(response.body, call.maxBodyBytes)),
      refused: false,
    };
  } catch (err) {
    return controller.signal.aborted ? { kind: "timeout" } : unreachableFetch(err);
  } finally {
    clearTimeout(timer);
  }
}

const decoder = new TextDecoder();

function parseJson(bytes: Uint8Array | null): JsonBody {
  if (bytes === null) return { ok: false, problem: "too large" };
  if (bytes.byteLength === 0) return { ok: false, problem: "empty" };
  try {
    return { ok: true, value: JSON.parse(decoder.decode(bytes)) as unknown };
  } catch {
    return { ok: false, problem: "not json" };
  }
}

/** The reason of a call that got no usable answer, in a few words for a log line. */
export function failureReason(outcome: Exclude<WorkerCallOutcome, { kind: "answered" }>): string {
  return outcome.kind === "timeout" ? "timeout" : outcome.reason;
}
