/**
 * A forward's call to a worker and the two things that cut it short: `timeoutMs` passing before
 * the answer, or the client going away. Each entry brings its caller: `fetchCaller` (fetch with
 * an AbortController) on Workers and wherever nothing better exists, and the Node entry's own,
 * which ends a node:http request directly and hears the client through its connection.
 *
 * Why not an AbortSignal everywhere: Node's AbortSignal, unlike other short-lived objects,
 * survives the young generation, and a heap profile found the two a proxied request made (the
 * adapter's request.signal and the forward's controller) to be the largest class of objects
 * promoted to the old heap. Without them the Node entry spends less CPU per forward
 * (README, Performance).
 */

/** The client's side of a request. */
export interface ClientLink {
  /** True once the client has gone. */
  readonly gone: boolean;
  /** Calls `listener` once if the client goes; returns the way to stop listening. */
  onGone(listener: () => void): () => void;
}

export interface WorkerCall {
  url: string;
  /** Method, headers, body, redirect: everything but a signal. */
  init: RequestInit;
  /** Until the response headers (a streamed body may then take as long as it needs). */
  timeoutMs: number;
  client: ClientLink;
}

export type WorkerCallResult =
  | { kind: "response"; response: Response }
  | { kind: "timeout" }
  /** The client went away first. */
  | { kind: "aborted" }
  /** The transport failed (fetch's TypeError, its cause saying why). */
  | { kind: "failed"; error: unknown };

export type CallWorker = (call: WorkerCall) => Promise<WorkerCallResult>;

/** The client link of a Fetch API request: its signal (Workers aborts it when the client goes). */
export function requestLink(request: Request): ClientLink {
  return {
    get gone() {
      return request.signal.aborted;
    },
    onGone(listener) {
      request.signal.addEventListener("abort", listener, { once: true });
      return () => request.signal.removeEventListener("abort", listener);
    },
  };
}

/** A caller over fetch: one AbortController per call, aborted by the timer or the client. */
export function fetchCaller(fetchImpl: typeof fetch): CallWorker {
  return async ({ url, init, timeoutMs, client }) => {
    if (client.gone) return { kind: "aborted" };
    const controller = new AbortController();
    let cut: "timeout" | "aborted" | undefined;
    const stop = (why: "timeout" | "aborted") => {
      cut ??= why;
      controller.abort();
    };
    const timer = setTimeout(() => stop("timeout"), timeoutMs);
    const stopListening = client.onGone(() => stop("aborted"));
    try {
      return { kind: "response", response: await fetchImpl(url, { ...init, signal: controller.signal }) };
    } catch (error) {
      return cut ? { kind: cut } : { kind: "failed", error };
    } finally {
      clearTimeout(timer);
      stopListening();
    }
  };
}
