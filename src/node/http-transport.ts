import { Agent, request, type IncomingMessage } from "node:http";
import { Readable } from "node:stream";
import { markComplete, markUndecoded } from "../resolve/transport-marks.ts";

/** Bodies up to this size (by Content-Length) are read whole and handed over as bytes. */
const COMPLETE_BODY_LIMIT = 256 * 1024;
const NULL_BODY_STATUS = new Set([204, 205, 304]);

/**
 * The Node entry's fetch for calls to workers: a body-less request to an http:// URL goes out on
 * node:http (keep-alive pool, no redirects followed, content-encoding passed through undecoded)
 * and a small answer comes back as complete bytes (transport-marks.ts), so a proxied GET builds
 * no WHATWG streams on either side: that garbage, promoted by every scavenge, was most of the
 * proxy's GC pauses and heap growth. Anything else (a request body, https, a passport JWKS URL)
 * goes to `fallback`. Failures look like undici's: TypeError("fetch failed") with the socket
 * error as `cause`, an AbortError when the signal fires.
 */
export function createNodeFetch(fallback: typeof fetch = globalThis.fetch): typeof fetch {
  const agent = new Agent({ keepAlive: true, scheduling: "lifo" });
  const nodeFetch = (input: RequestInfo | URL, init?: RequestInit): Promise<Response> => {
    const url = typeof input === "string" ? input : input instanceof URL ? input.href : input.url;
    if (input instanceof Request || init?.body != null || !url.startsWith("http://")) return fallback(input, init);
    return send(agent, new URL(url), init ?? {});
  };
  return nodeFetch as typeof fetch;
}

function send(agent: Agent, url: URL, init: RequestInit): Promise<Response> {
  const signal = init.signal ?? undefined;
  if (signal?.aborted) return Promise.reject(abortError(signal));
  const method = (init.method ?? "GET").toUpperCase();
  return new Promise<Response>((resolve, reject) => {
    const req = request({
      agent,
      host: url.hostname.replace(/^\[|\]$/g, ""),
      port: url.port || 80,
      path: `${url.pathname}${url.search}`,
      method,
      headers: headerObject(init.headers),
    });
    const onAbort = () => req.destroy(abortError(signal!));
    signal?.addEventListener("abort", onAbort, { once: true });
    const settle = () => signal?.removeEventListener("abort", onAbort);
    req.once("error", (err) => {
      settle();
      reject(signal?.aborted ? abortError(signal) : new TypeError("fetch failed", { cause: err }));
    });
    req.once("response", (res) => {
      try {
        answer(res);
      } catch (err) {
        // A status the Fetch API cannot represent (outside 200–599), as undici would fail.
        res.destroy();
        settle();
        reject(new TypeError("fetch failed", { cause: err }));
      }
    });
    const answer = (res: IncomingMessage) => {
      // Pairs, not Headers: the Node adapter's Response keeps them as given until someone reads
      // .headers, and the proxy answers from the raw lines (rawHeadersOf) without ever doing so.
      const headers = headerPairs(res.rawHeaders);
      const status = res.statusCode ?? 502;
      const init = { status, statusText: res.statusMessage ?? "", headers };
      if (method === "HEAD" || NULL_BODY_STATUS.has(status)) {
        res.resume();
        settle();
        resolve(markComplete(new Response(null, init), null, res.rawHeaders));
        return;
      }
      const length = Number(res.headers["content-length"] ?? NaN);
      if (length <= COMPLETE_BODY_LIMIT) {
        readWhole(res, length).then(
          (bytes) => {
            settle();
            resolve(markComplete(new Response(bytes, init), bytes, res.rawHeaders));
          },
          (err: unknown) => {
            settle();
            reject(signal?.aborted ? abortError(signal) : new TypeError("fetch failed", { cause: err }));
          },
        );
        return;
      }
      // A streamed body outlives this call: the caller's signal keeps aborting it until it ends.
      res.once("close", settle);
      resolve(markUndecoded(new Response(Readable.toWeb(res) as ReadableStream<Uint8Array>, init)));
    };
    req.end();
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

function abortError(signal: AbortSignal): Error {
  return signal.reason instanceof Error ? signal.reason : new DOMException("This operation was aborted", "AbortError");
}
