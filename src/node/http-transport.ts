import { Agent, request, type ClientRequest, type IncomingMessage } from "node:http";
import { Readable, type Duplex } from "node:stream";
import { markComplete, markUndecoded } from "../resolve/transport-marks.ts";
import { fetchCaller, type CallWorker } from "../resolve/worker-call.ts";
import { DeadlineSweep } from "./deadline-sweep.ts";
import { CallCut, signalCut, type Cut } from "./request-cuts.ts";

/** Bodies up to this size (by Content-Length) are read whole and handed over as bytes. */
const COMPLETE_BODY_LIMIT = 256 * 1024;
const NULL_BODY_STATUS = new Set([204, 205, 304]);
/**
 * How long a pooled connection may sit idle. With no agent timeout at all Node ignores a server's
 * `Keep-Alive: timeout=N` hint; with one, it closes a second before the hint (a Node worker's is
 * 5 s), so an idle socket is dropped before the worker drops it.
 */
const IDLE_SOCKET_MS = 4_000;
/** RFC 9110 §9.2.2: what a client may send again on its own when a connection fails under it. */
const IDEMPOTENT = new Set(["GET", "HEAD", "OPTIONS", "TRACE", "PUT", "DELETE"]);
const STALE_SOCKET_CODES = new Set(["ECONNRESET", "EPIPE"]);

/**
 * The Node entry's transport to workers. A body-less request to an http:// URL goes out on
 * node:http (keep-alive pool, no redirects followed, content-encoding passed through undecoded)
 * and a small answer comes back as complete bytes (transport-marks.ts), so a proxied GET builds
 * no WHATWG streams on either side: that garbage, promoted by every scavenge, was most of the
 * proxy's GC pauses and heap growth. Anything else (a request body, https, a passport JWKS URL)
 * goes to `fallback`.
 *
 * `fetch` is for every call Pinboard makes (probes, heartbeats, the sweeper): it fails like
 * undici, TypeError("fetch failed") with the socket error as `cause`, or an AbortError when the
 * signal fires. `callWorker` is the forward's call: the same request, ended by its timer or by
 * the client's going away without an AbortSignal (worker-call.ts says why).
 */
export interface NodeTransport {
  fetch: typeof fetch;
  callWorker: CallWorker;
}

export function createNodeTransport(fallback: typeof fetch = globalThis.fetch): NodeTransport {
  const agent = new Agent({ keepAlive: true, scheduling: "lifo", timeout: IDLE_SOCKET_MS });
  const nodeFetch = (input: RequestInfo | URL, init?: RequestInit): Promise<Response> => {
    const url = typeof input === "string" ? input : input instanceof URL ? input.href : input.url;
    if (input instanceof Request || !takes(url, init)) return fallback(input, init);
    return send(agent, new URL(url), init ?? {}, signalCut(init?.signal ?? undefined));
  };
  const viaFallback = fetchCaller(fallback);
  // A forward times out up to a tenth of its timeout late, at most 250 ms (the default is 30 s).
  const sweeps = new Map<number, DeadlineSweep<CallCut>>();
  const sweepFor = (timeoutMs: number) => {
    const tick = Math.min(250, Math.max(1, Math.floor(timeoutMs / 10)));
    return sweeps.get(tick) ?? sweeps.set(tick, new DeadlineSweep<CallCut>(tick)).get(tick)!;
  };
  const callWorker: CallWorker = async (call) => {
    if (!takes(call.url, call.init)) return viaFallback(call);
    const cut = new CallCut(call, sweepFor(call.timeoutMs));
    try {
      return { kind: "response", response: await send(agent, new URL(call.url), call.init, cut) };
    } catch (error) {
      return cut.why ? { kind: cut.why } : { kind: "failed", error };
    }
  };
  return { fetch: nodeFetch as typeof fetch, callWorker };
}

/** What node:http carries here: no body, plain http. */
const takes = (url: string, init: RequestInit | undefined): boolean => init?.body == null && url.startsWith("http://");

function send(agent: Agent, url: URL, init: RequestInit, cut: Cut): Promise<Response> {
  if (cut.reason) return Promise.reject(cut.reason);
  const method = (init.method ?? "GET").toUpperCase();
  const options = {
    agent,
    host: url.hostname.replace(/^\[|\]$/g, ""),
    port: url.port || 80,
    path: `${url.pathname}${url.search}`,
    method,
    headers: headerObject(init.headers),
  };
  return new Promise<Response>((resolve, reject) => {
    let req: ClientRequest;
    let ended: Error | undefined;
    cut.arm((reason) => {
      ended = reason;
      req.destroy(reason);
    });
    const fail = (err: unknown) => {
      cut.disarm();
      reject(ended ?? new TypeError("fetch failed", { cause: err }));
    };
    const attempt = () => {
      const sent = request(options);
      req = sent;
      let answered = false;
      sent.once("error", (err: NodeJS.ErrnoException) => {
        // A pooled connection the worker closed while it sat idle (the two sides' timers raced, or
        // an event-loop stall hid the close): the worker never took the request, so it goes again
        // on another connection. Each such failure drops one pooled socket, so this ends.
        if (!answered && !ended && sent.reusedSocket && IDEMPOTENT.has(method) && STALE_SOCKET_CODES.has(err.code ?? "")) attempt();
        else fail(err);
      });
      // A 101 to a request that asked for no upgrade: the socket is the worker's protocol now, not
      // an answer (without this listener Node destroys it and the request would never settle).
      sent.once("upgrade", (res: IncomingMessage, socket: Duplex) => {
        answered = true;
        socket.destroy();
        fail(new Error(`worker answered ${res.statusCode ?? 101} ${res.statusMessage ?? ""} to a request without an upgrade`.trimEnd()));
      });
      // Whatever else ends the exchange before an answer (the 'error' above usually came first,
      // and a request sent again is a new exchange) still settles it.
      sent.once("close", () => {
        if (!answered && sent === req) fail(new Error("connection closed before the worker answered"));
      });
      sent.once("response", (res) => {
        answered = true;
        try {
          answer(res);
        } catch (err) {
          // A status the Fetch API cannot represent (outside 200–599), as undici would fail.
          res.destroy();
          fail(err);
        }
      });
      req.end();
    };
    const answer = (res: IncomingMessage) => {
      // Pairs, not Headers: the Node adapter's Response keeps them as given until someone reads
      // .headers, and the proxy answers from the raw lines (rawHeadersOf) without ever doing so.
      const headers = headerPairs(res.rawHeaders);
      const status = res.statusCode ?? 502;
      const init = { status, statusText: res.statusMessage ?? "", headers };
      if (method === "HEAD" || NULL_BODY_STATUS.has(status)) {
        res.resume();
        cut.disarm();
        resolve(markComplete(new Response(null, init), null, res.rawHeaders));
        return;
      }
      const length = Number(res.headers["content-length"] ?? NaN);
      if (length <= COMPLETE_BODY_LIMIT) {
        readWhole(res, length).then((bytes) => {
          cut.disarm();
          resolve(markComplete(new Response(bytes, init), bytes, res.rawHeaders));
        }, fail);
        return;
      }
      if (cut.coversBody) res.once("close", () => cut.disarm());
      else cut.disarm();
      resolve(markUndecoded(new Response(Readable.toWeb(res) as ReadableStream<Uint8Array>, init)));
    };
    attempt();
  });
}

function readWhole(res: IncomingMessage, length: number): Promise<Uint8Array<ArrayBuffer>> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    res.on("data", (chunk: Buffer) => chunks.push(chunk));
    res.once("end", () => {
      const whole = chunks.length === 1 ? chunks[0]! : Buffer.concat(chunks);
      if (whole.length !== length) reject(new Error(`body ended after ${whole.length} of ${length} bytes`));
      // A copy: a socket chunk is a view into a shared slab that the body would otherwise pin.
      else resolve(new Uint8Array(whole));
    });
    res.once("error", reject);
    res.once("aborted", () => reject(new Error("response aborted")));
  });
}

function headerObject(headers: HeadersInit | undefined): Record<string, string> {
  // A plain object (what the proxy's forwards pass) is taken as it is.
  if (headers && !(headers instanceof Headers) && !Array.isArray(headers)) return headers as Record<string, string>;
  const out: Record<string, string> = {};
  if (headers) new Headers(headers).forEach((value, name) => (out[name] = value));
  return out;
}

function headerPairs(raw: string[]): [string, string][] {
  const pairs: [string, string][] = [];
  for (let i = 0; i + 1 < raw.length; i += 2) pairs.push([raw[i]!, raw[i + 1]!]);
  return pairs;
}
