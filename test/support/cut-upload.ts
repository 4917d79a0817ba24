import { connect, type Socket } from "node:net";
import { parseResponses } from "./http-wire.ts";

/**
 * Raw-socket uploads that a client does not finish: cut at a chosen byte, or stalled, on a fresh
 * TCP connection each (node:http would finish or refuse them itself).
 */

/** The head of a POST declaring `declared` body bytes, closing the connection after its answer. */
export function uploadHead(url: string, path: string, declared: number): string {
  const { host } = new URL(url);
  return `POST ${path} HTTP/1.1\r\nHost: ${host}\r\nContent-Type: application/octet-stream\r\nContent-Length: ${declared}\r\nConnection: close\r\n\r\n`;
}

function open(url: string): Promise<Socket> {
  const target = new URL(url);
  return new Promise((resolve, reject) => {
    const socket = connect(Number(target.port), target.hostname);
    socket.once("connect", () => resolve(socket));
    socket.once("error", reject);
  });
}

/**
 * Writes `bytes`, waits for `before()` (the request reaching the worker, so the forward has
 * started), and closes the connection without reading anything.
 */
export async function cutUpload(url: string, bytes: Buffer, before: () => Promise<unknown>): Promise<void> {
  const socket = await open(url);
  socket.on("error", () => {});
  socket.write(bytes);
  try {
    await before();
  } finally {
    socket.destroy();
  }
}

/**
 * Writes `bytes`, then one more body byte every `dripMs` until the server answers and closes (or
 * `timeoutMs` passes): an upload the client never finishes. Answers the status and body.
 */
export async function stalledUpload(
  url: string,
  bytes: Buffer,
  options: { dripMs: number; timeoutMs: number },
): Promise<{ status: number; body: string; dripped: number }> {
  const socket = await open(url);
  const chunks: Buffer[] = [];
  let dripped = 0;
  socket.on("error", () => {});
  socket.on("data", (d: Buffer) => chunks.push(d));
  socket.write(bytes);
  const drip = setInterval(() => {
    if (socket.writable) {
      socket.write("x");
      dripped++;
    }
  }, options.dripMs);
  await new Promise<void>((resolve) => {
    const timer = setTimeout(resolve, options.timeoutMs);
    socket.once("close", () => {
      clearTimeout(timer);
      resolve();
    });
  });
  clearInterval(drip);
  socket.destroy();
  const [answer] = parseResponses(Buffer.concat(chunks), ["POST"], true).responses;
  return { status: answer?.status ?? 0, body: answer?.body.toString() ?? "", dripped };
}
