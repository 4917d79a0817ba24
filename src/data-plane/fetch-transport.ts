import type { UploadPipe } from "../deps/runtime-info.ts";
import { answerResponse } from "../errors/pinboard-error.ts";
import { unreachableFetch } from "../outbound/failures.ts";
import { onBodyDone } from "../placement/inflight.ts";
import { ClientUpload } from "./client-upload.ts";
import { forwardResponseHeaders, isActivationRefusal } from "./header-hygiene.ts";
import type { ClientLink } from "./inbound.ts";
import type { Delivery, Forward, Transport } from "./transport.ts";

export interface FetchTransportOptions {
  fetch: typeof fetch;
  /** The client's body (null when it has none): a stream, sent once. */
  body: ReadableStream<Uint8Array> | null;
  client: ClientLink;
  /** Keeps work alive after the response (waitUntil on Workers). */
  defer(work: Promise<unknown>): void;
  /** Undici (Node's fetch) decodes content-encoding: the headers that describe the encoded body go. */
  decodesBodies: boolean;
  /** The runtime's own pass-through stream for the client's body (RuntimeInfo.uploadPipe). */
  uploadPipe?: UploadPipe | undefined;
}

/**
 * The data plane over fetch (the Workers entry, and the Hono app wherever it serves the data
 * plane itself): one fetch per send, redirects never followed, ended by an AbortController when
 * the forward timeout passes before the answer (timed from the client's last byte), the client's
 * upload outlasts the request timeout (408), or the client goes away. Bodies stream both ways
 * and the inflight slot is held until the response body is done. An upgrade on Workers comes
 * back as a Response carrying `webSocket` and is returned as it is.
 */
export function fetchTransport(options: FetchTransportOptions): Transport<Response> {
  return {
    defer: options.defer,
    reply: answerResponse,
    async send(forward, release): Promise<Delivery<Response>> {
      const called = await call(options, forward);
      if (called.kind !== "response") return called;
      const { response } = called;
      const webSocket = (response as Response & { webSocket?: unknown }).webSocket;
      if (response.status < 200 && !(forward.upgrade && webSocket)) {
        // A 101 to a request that asked for no upgrade (or a WebSocket the runtime did not hand
        // over) is no answer a client can be given. An informational answer (103 Early Hints) is
        // legal HTTP that workerd's fetch hands over as if it were final: the runtime's limit, not
        // the worker's failure.
        await response.body?.cancel().catch(() => {});
        const informational = response.status !== 101;
        return {
          kind: "unreachable",
          connected: true,
          reason: `worker answered ${response.status}${informational ? "" : " to a request without an upgrade"}`,
          ...(informational ? { local: true as const } : {}),
        };
      }
      if (response.status > 599) {
        // What a Response cannot carry (its constructor throws a RangeError past 599).
        await response.body?.cancel().catch(() => {});
        return { kind: "unreachable", connected: true, reason: `worker answered ${response.status}` };
      }
      if (isActivationRefusal(response.status, response.headers)) {
        if (!forward.relayRefusal) {
          await response.body?.cancel().catch(() => {});
          return { kind: "refused", relay: null };
        }
        return {
          kind: "refused",
          relay: {
            send: () =>
              new Response(onBodyDone(response.body, release), {
                status: 503,
                headers: forwardResponseHeaders(response.headers, { status: 503 }),
              }),
            drop: () => {
              void response.body?.cancel().catch(() => {});
              release();
            },
          },
        };
      }
      if (webSocket) {
        // The WebSocket slot covers the handshake only: the runtime proxies the socket itself and
        // tells Pinboard nothing of its close (docs/decisions.md, WebSockets).
        release();
        // The 101's headers are filtered like any answer's (Pinboard-*, the refusal,
        // Service-Worker-Allowed, hop-by-hop) before the socket goes to the client.
        const headers = forwardResponseHeaders(response.headers, { status: response.status });
        return {
          kind: "answered",
          status: response.status,
          result: new Response(null, { status: response.status, headers, webSocket } as ResponseInit),
        };
      }
      const decoded = options.decodesBodies && response.headers.has("content-encoding");
      const headers = forwardResponseHeaders(response.headers, { decoded, status: response.status });
      const init = { status: response.status, statusText: response.statusText, headers };
      return {
        kind: "answered",
        status: response.status,
        result: new Response(onBodyDone(response.body, release), init),
      };
    },
  };
}

type Called =
  | { kind: "response"; response: Response }
  | Exclude<Delivery<never>, { kind: "answered" } | { kind: "refused" }>;

type Cut = "timeout" | "aborted" | "client-timeout";

/**
 * One fetch, cut short by the forward timeout (before the answer), the client's going away, or
 * the client's upload outlasting its own deadline. The forward timeout runs from the client's
 * last byte; a failure once the client's body has broken off is the client's, not the worker's.
 */
async function call(options: FetchTransportOptions, forward: Forward): Promise<Called> {
  const { client } = options;
  if (client.gone) return { kind: "aborted", connected: false };
  const controller = new AbortController();
  let cut: Cut | undefined;
  const stop = (why: Cut) => {
    cut ??= why;
    controller.abort();
  };
  const upload =
    forward.withBody && options.body
      ? new ClientUpload(options.body, declaredLength(forward), options.uploadPipe)
      : null;
  const deadline = new Deadline(stop);
  if (upload === null) deadline.start("timeout", forward.timeoutMs);
  else {
    if (forward.uploadTimeoutMs > 0) deadline.start("client-timeout", forward.uploadTimeoutMs);
    upload.whenComplete(() => deadline.start("timeout", forward.timeoutMs));
  }
  const stopListening = client.onGone(() => stop("aborted"));
  const body = upload?.stream ?? null;
  try {
    const init = {
      method: forward.method,
      headers: framedHeaders(forward),
      body,
      redirect: "manual",
      signal: controller.signal,
      ...(body ? { duplex: "half" } : {}),
    };
    return {
      kind: "response",
      response: await options.fetch(`${forward.advertiseUrl}${forward.pathAndQuery}`, init as RequestInit),
    };
  } catch (error) {
    if (cut === "timeout" || cut === "client-timeout") return { kind: cut };
    // The client went away first (a body that broke off too, however the runtime reports it).
    // The fetch was under way, so the worker may hold the instance at this epoch already: its
    // placement stays (connected), or the next request would place it elsewhere beside that.
    if (cut === "aborted" || upload?.state === "broken") return { kind: "aborted", connected: true };
    return unreachableFetch(error);
  } finally {
    deadline.clear();
    stopListening();
  }
}

/** The one deadline in force: the client's upload's, then (from its last byte) the worker's. */
class Deadline {
  private timer: ReturnType<typeof setTimeout> | undefined;

  constructor(private readonly stop: (why: Cut) => void) {}

  start(why: Cut, ms: number): void {
    clearTimeout(this.timer);
    this.timer = setTimeout(() => this.stop(why), ms);
  }

  clear(): void {
    clearTimeout(this.timer);
  }
}

const declaredLength = ({ framing }: Forward): number | null => (framing.kind === "length" ? framing.length : null);

/**
 * The forward's headers with the client's Content-Length, so the runtime sends the body with the
 * length the client gave it (without one, fetch streams it chunked).
 */
function framedHeaders(forward: Forward): Record<string, string> {
  const { framing } = forward;
  if (framing.kind !== "length" || !forward.withBody) return forward.headers;
  return { ...forward.headers, "content-length": String(framing.length) };
}
