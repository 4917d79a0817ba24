import { STATUS_CODES, type IncomingHttpHeaders, type IncomingMessage } from "node:http";
import { pipeline, type Duplex } from "node:stream";

/**
 * Plain HTTP answers written straight onto the socket of an 'upgrade' event, which has no
 * ServerResponse: Pinboard's own errors (a buffered Response) and a worker's non-101 answer
 * (streamed). Every answer ends the connection (Connection: close), so a relayed body without a
 * Content-Length is delimited by the close.
 */

const NOT_RELAYED = new Set(["connection", "keep-alive", "transfer-encoding"]);

function head(status: number, headers: Headers, extra: string[]): string {
  const lines = [`HTTP/1.1 ${status} ${STATUS_CODES[status] ?? ""}`];
  headers.forEach((value, name) => {
    if (!NOT_RELAYED.has(name)) lines.push(`${name}: ${value}`);
  });
  lines.push(...extra, "connection: close");
  return `${lines.join("\r\n")}\r\n\r\n`;
}

const usable = (socket: Duplex): boolean => !socket.destroyed && socket.writable;

/** Writes a whole Response (Pinboard's own answers are small) and closes the connection. */
export async function sendResponse(socket: Duplex, response: Response): Promise<void> {
  const body = Buffer.from(await response.arrayBuffer());
  if (!usable(socket)) return;
  const headers = new Headers(response.headers);
  headers.delete("content-length");
  socket.end(Buffer.concat([Buffer.from(head(response.status, headers, [`content-length: ${body.byteLength}`]), "latin1"), body]));
}

/** The headers of a node:http message as a Fetch Headers (repeated fields appended one by one). */
export function headersOf(incoming: IncomingHttpHeaders): Headers {
  const out = new Headers();
  for (const [name, value] of Object.entries(incoming)) {
    if (value === undefined) continue;
    for (const v of Array.isArray(value) ? value : [value]) out.append(name, v);
  }
  return out;
}

/**
 * Streams a worker's answer to the client: `headers` already filtered by the caller, the body
 * piped as it arrives. Resolves once the body was written (or either side went away).
 */
export function relayResponse(socket: Duplex, status: number, headers: Headers, body: IncomingMessage): Promise<void> {
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
