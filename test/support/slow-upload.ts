import { request } from "node:http";

export interface SlowUploadResult {
  status: number;
  body: string;
  /** Body bytes handed to the socket when the response head arrived. */
  writtenAtResponse: number;
  /** Body bytes handed to the socket in all. */
  written: number;
  /** ms from the response head to the connection being closed by the server; null when it stayed open. */
  closedAfterMs: number | null;
}

/**
 * POSTs a body of `totalBytes` (never built in memory: one chunk written over and over, with a
 * pause between writes) and watches what the server does: when it answers, and whether it then
 * closes the connection rather than swallowing the rest. Without `declaredLength` the body is
 * chunked. Gives up writing `watchMs` after the response, or when the server closes.
 */
export function slowUpload(
  url: string,
  options: {
    headers?: Record<string, string>;
    totalBytes: number;
    declaredLength?: number;
    chunkBytes?: number;
    pauseMs?: number;
    watchMs?: number;
  },
): Promise<SlowUploadResult> {
  const chunk = Buffer.alloc(options.chunkBytes ?? 64 * 1024, 0x78);
  const pauseMs = options.pauseMs ?? 5;
  const watchMs = options.watchMs ?? 4000;
  return new Promise((resolve, reject) => {
    let written = 0;
    let writtenAtResponse = -1;
    let respondedAt = 0;
    let closedAt = 0;
    let status = 0;
    let body = "";
    let bodyDone = false;
    let finished = false;

    const headers: Record<string, string> = { "content-type": "application/json", ...options.headers };
    if (options.declaredLength !== undefined) headers["content-length"] = String(options.declaredLength);
    const req = request(url, { method: "POST", headers });
    const done = () => {
      if (finished) return;
      if (!bodyDone || (closedAt === 0 && Date.now() - respondedAt < watchMs && written < options.totalBytes)) return;
      finished = true;
      resolve({ status, body, writtenAtResponse, written, closedAfterMs: closedAt ? closedAt - respondedAt : null });
    };
    req.on("response", (res) => {
      status = res.statusCode ?? 0;
      writtenAtResponse = written;
      respondedAt = Date.now();
      res.setEncoding("utf8");
      res.on("data", (d: string) => (body += d));
      res.on("end", () => {
        bodyDone = true;
        done();
      });
      res.on("error", () => {
        bodyDone = true;
        done();
      });
    });
    const closed = () => {
      if (!closedAt) closedAt = Date.now();
      if (!respondedAt) {
        // Closed before any answer: report it as such (status 0).
        respondedAt = closedAt;
        writtenAtResponse = written;
        bodyDone = true;
      }
      done();
    };
    req.on("error", closed);
    req.on("close", closed);

    const pump = async () => {
      while (!finished && !closedAt && written < options.totalBytes) {
        if (respondedAt && Date.now() - respondedAt >= watchMs) break;
        const ok = req.write(chunk);
        written += chunk.length;
        if (!ok) {
          await new Promise<void>((r) => {
            const wake = () => {
              req.off("drain", wake);
              req.off("close", wake);
              r();
            };
            req.once("drain", wake);
            req.once("close", wake);
            setTimeout(wake, 200);
          });
        }
        if (pauseMs > 0) await new Promise((r) => setTimeout(r, pauseMs));
      }
      if (!closedAt && !finished) req.end();
      // Let the last events arrive, then settle with what was seen.
      setTimeout(() => {
        if (finished) return;
        bodyDone = true;
        finished = true;
        resolve({ status, body, writtenAtResponse, written, closedAfterMs: closedAt ? closedAt - respondedAt : null });
      }, 1000);
    };
    pump().catch(reject);
  });
}
