import { gzipSync } from "node:zlib";
import type { AttestationClaims } from "../../src/contract/attestation.ts";
import type { Instance, InstanceContext, RequestContext } from "../../src/pinned/index.ts";

/** What `/gzip` answers, gzip-encoded. */
export const GZIP_TEXT = "a compressed answer ".repeat(40);

/** What Echo answers as JSON: what reached it. */
export interface EchoAnswer {
  method: string;
  path: string;
  query: string;
  /** The request's headers by lower-case name. */
  headers: Record<string, string>;
  bodyBytes: number;
  epoch: string;
  hits: number;
  id: string;
  ns: string;
  attestation: AttestationClaims;
}

/**
 * An instance that tells what reached it: method, path, query, headers, body size, its epoch and
 * how many requests this activation served. `?status=N` answers N; `?sleep=ms` waits first;
 * `?redirect=1` answers a 302 (which Pinboard must relay, not follow); the path `/gzip` answers
 * GZIP_TEXT with Content-Encoding: gzip.
 */
export class Echo implements Instance {
  hits = 0;
  constructor(readonly ctx: InstanceContext) {}

  async fetch(request: Request, ctx: RequestContext): Promise<Response> {
    this.hits++;
    const url = new URL(request.url);
    const sleep = Number(url.searchParams.get("sleep") ?? 0);
    if (sleep > 0) await new Promise((r) => setTimeout(r, sleep));
    if (url.searchParams.get("redirect"))
      return new Response(null, { status: 302, headers: { location: "http://127.0.0.1:1/elsewhere" } });
    if (ctx.path === "/gzip") {
      return new Response(gzipSync(Buffer.from(GZIP_TEXT)), {
        headers: { "content-type": "text/plain", "content-encoding": "gzip" },
      });
    }
    if (ctx.path === "/download") {
      const total = Number(url.searchParams.get("bytes") ?? 0);
      const chunk = new Uint8Array(64 * 1024).fill(120);
      let sent = 0;
      return new Response(
        new ReadableStream<Uint8Array>({
          pull(controller) {
            if (sent >= total) return controller.close();
            const n = Math.min(chunk.length, total - sent);
            controller.enqueue(n === chunk.length ? chunk : chunk.subarray(0, n));
            sent += n;
          },
        }),
        { headers: { "content-type": "application/octet-stream" } },
      );
    }
    let bodyBytes = 0;
    if (request.body) {
      const reader = request.body.getReader();
      for (;;) {
        const { done, value } = await reader.read();
        if (done) break;
        bodyBytes += value.byteLength;
      }
    }
    const headers: Record<string, string> = {};
    request.headers.forEach((v, k) => {
      headers[k] = v;
    });
    const answer: EchoAnswer = {
      method: request.method,
      path: ctx.path,
      query: url.search,
      headers,
      bodyBytes,
      epoch: ctx.epoch,
      hits: this.hits,
      id: ctx.id,
      ns: ctx.ns,
      attestation: ctx.attestation,
    };
    return new Response(JSON.stringify(answer), {
      status: Number(url.searchParams.get("status") ?? 200),
      headers: {
        "content-type": "application/json",
        "x-echo": "1",
        "pinboard-secret-leak": "nope",
        connection: "keep-alive, x-hop",
        "x-hop": "drop-me",
      },
    });
  }
}
