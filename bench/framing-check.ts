/**
 * What each front actually sends back in each answer mode: one request per front and mode,
 * with the status, the framing the client received (Content-Length or chunked) and the body
 * size. The worker's own answers must be what the mode says, or the comparison means nothing:
 * `direct` is checked strictly; what a proxy makes of them is reported.
 */
import { request } from "node:http";
import type { Framing } from "./paths.ts";

export interface FramingSeen {
  front: string;
  mode: Framing;
  status: number;
  /** "length" (Content-Length), "chunked", or what else framed it ("close", …). */
  framing: string;
  bodyBytes: number;
}

function once(
  url: string,
  path: string,
  headers: Record<string, string>,
): Promise<Omit<FramingSeen, "front" | "mode">> {
  const origin = new URL(url);
  return new Promise((resolve, reject) => {
    const req = request({ host: origin.hostname, port: origin.port, path, headers, agent: false }, (res) => {
      let bodyBytes = 0;
      res.on("data", (chunk: Buffer) => (bodyBytes += chunk.length));
      res.once("end", () => {
        const te = res.headers["transfer-encoding"];
        const framing = te?.includes("chunked")
          ? "chunked"
          : res.headers["content-length"] !== undefined
            ? "length"
            : (te ?? "close");
        resolve({ status: res.statusCode ?? 0, framing, bodyBytes });
      });
      res.once("error", reject);
    });
    req.setTimeout(10_000, () => req.destroy(new Error(`no answer from ${url}${path} in 10 s`)));
    req.once("error", reject);
    req.end();
  });
}

export interface FramingProbe {
  front: string;
  url: string;
  /** The path of one request in the mode given. */
  path: (mode: Framing) => string;
  /** The request's headers, given its path (an attestation names its call). */
  headers?: (path: string) => Record<string, string>;
}

export async function checkFraming(probes: FramingProbe[]): Promise<FramingSeen[]> {
  const seen: FramingSeen[] = [];
  for (const p of probes) {
    for (const mode of ["length", "chunked"] as const)
      seen.push({ front: p.front, mode, ...(await once(p.url, p.path(mode), p.headers?.(p.path(mode)) ?? {})) });
  }
  const wrong = seen.filter(
    (s) => s.front === "direct" && (s.status !== 200 || s.framing !== s.mode || s.bodyBytes !== 11),
  );
  if (wrong.length) throw new Error(`the bench's worker does not answer as the modes say: ${JSON.stringify(wrong)}`);
  return seen;
}

export function describeFraming(seen: FramingSeen[]): string {
  const fronts = [...new Set(seen.map((s) => s.front))];
  return fronts
    .map((front) => {
      const modes = seen
        .filter((s) => s.front === front)
        .map((s) => `${s.mode} → ${s.status} ${s.framing} ${s.bodyBytes} B`);
      return `  ${front}: ${modes.join("; ")}`;
    })
    .join("\n");
}
