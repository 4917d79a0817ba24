import { connect } from "node:net";

export interface RawSocketResponse {
  status: number;
  /** Header lines as sent, in order: [name, value] with the name's case kept. */
  headers: Array<[string, string]>;
  body: string;
}

/**
 * One HTTP/1.1 request written byte for byte on a fresh TCP connection (Connection: close), so
 * a test controls what node:http and fetch normalise away: header case, duplicated headers,
 * odd spacing. Answers the parsed status line, headers and the de-chunked body.
 */
export function rawSocketRequest(
  url: string,
  options: { method?: string; path: string; headers: Array<[string, string]>; body?: string; timeoutMs?: number },
): Promise<RawSocketResponse> {
  const target = new URL(url);
  return new Promise((resolve, reject) => {
    const socket = connect(Number(target.port), target.hostname);
    const chunks: Buffer[] = [];
    const timer = setTimeout(() => {
      socket.destroy();
      reject(new Error(`no answer from ${url}${options.path}`));
    }, options.timeoutMs ?? 10_000);
    socket.on("connect", () => {
      const body = options.body ?? "";
      const lines = [
        `${options.method ?? "GET"} ${options.path} HTTP/1.1`,
        `Host: ${target.host}`,
        "Connection: close",
      ];
      for (const [name, value] of options.headers) lines.push(`${name}: ${value}`);
      if (body) lines.push(`Content-Length: ${Buffer.byteLength(body)}`);
      socket.write(`${lines.join("\r\n")}\r\n\r\n${body}`);
    });
    socket.on("data", (d: Buffer) => chunks.push(d));
    socket.on("error", (err) => {
      clearTimeout(timer);
      reject(err);
    });
    socket.on("close", () => {
      clearTimeout(timer);
      const raw = Buffer.concat(chunks);
      const split = raw.indexOf("\r\n\r\n");
      const head = raw
        .subarray(0, split < 0 ? raw.length : split)
        .toString("latin1")
        .split("\r\n");
      const status = Number(/^HTTP\/1\.[01] (\d{3})/.exec(head[0] ?? "")?.[1] ?? 0);
      const headers = head.slice(1).map((line): [string, string] => {
        const colon = line.indexOf(":");
        return [line.slice(0, colon), line.slice(colon + 1).trim()];
      });
      let body: Buffer = split < 0 ? Buffer.alloc(0) : raw.subarray(split + 4);
      if (headers.some(([n, v]) => n.toLowerCase() === "transfer-encoding" && /chunked/i.test(v))) body = dechunk(body);
      resolve({ status, headers, body: body.toString("utf8") });
    });
  });
}

function dechunk(data: Buffer): Buffer {
  const out: Buffer[] = [];
  let rest = data;
  for (;;) {
    const eol = rest.indexOf("\r\n");
    if (eol < 0) break;
    const size = parseInt(rest.subarray(0, eol).toString("latin1"), 16);
    if (!size) break;
    out.push(rest.subarray(eol + 2, eol + 2 + size));
    rest = rest.subarray(eol + 2 + size + 2);
  }
  return Buffer.concat(out);
}
