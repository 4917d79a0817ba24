import { type IncomingMessage, STATUS_CODES } from "node:http";
import { type Duplex, pipeline } from "node:stream";
import type { Answer } from "../../../errors/pinboard-error.ts";

/**
 * Plain HTTP answers written straight onto the socket of an 'upgrade' event, which has no
 * ServerResponse: Pinboard's own answers and a worker's non-101 answer (streamed). Every answer
 * ends the connection (Connection: close), so a relayed body without a Content-Length is
 * delimited by the close.
 */

const NOT_RELAYED = new Set(["connection", "keep-alive", "transfer-encoding"]);

function head(status: number, headers: Record<string, string | string[]>, extra: string[]): string {
  const lines = [`HTTP/1.1 ${status} ${STATUS_CODES[status] ?? ""}`];
  for (const name of Object.keys(headers)) {
    if (NOT_RELAYED.has(name)) continue;
    const value = headers[name]!;
    for (const v of Array.isArray(value) ? value : [value]) lines.push(`${name}: ${v}`);
  }
  lines.push(...extra, "connection: close");
  return `${lines.join("\r\n")}\r\n\r\n`;
}

const usable = (socket: Duplex): boolean => !socket.destroyed && socket.writable;

/** Writes one of Pinboard's own answers and closes the connection. */
export function writeRawAnswer(socket: Duplex, answer: Answer): void {
  if (!usable(socket)) return;
  const body = Buffer.from(answer.body ?? "", "utf8");
  const headers = { ...answer.headers };
  delete headers["content-length"];
  socket.end(
    Buffer.concat([Buffer.from(head(answer.status, headers, [`content-length: ${body.byteLength}`]), "latin1"), body]),
  );
}

/**
 * Streams a worker's answer to the client: `headers` already filtered by the caller, the body
 * piped as it arrives. Resolves once the body was written (or either side went away).
 */
export function relayRawAnswer(
  socket: Duplex,
  status: number,
  headers: Record<string, string | string[]>,
  body: IncomingMessage,
): Promise<void> {
  return new Promise<void>((resolve) => {
    if (!usable(socket)) {
      body.resume();
      resolve();
      return;
    }
    socket.write(head(status, headers, []), "latin1");
    pipeline(body, socket, () => resolve());
  });
}
