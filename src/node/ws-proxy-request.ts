import type { IncomingMessage } from "node:http";
import { isWebSocketUpgrade } from "../resolve/headers.ts";

/**
 * What the WebSocket proxy reads off a raw upgrade request before deciding anything: the Fetch
 * Request the shared data-plane code (planForward, the header filter, affinity) works on, whether
 * it is a WebSocket handshake at all, and whether that handshake is well formed.
 */

/**
 * The upgrade request as a Fetch Request, built the way @hono/node-server builds one for the
 * HTTP path (so X-Forwarded-Host and the affinity key see the same URL). Header values a Fetch
 * Headers refuses make it null (answered 400).
 */
export function webRequestOf(req: IncomingMessage): Request | null {
  const encrypted = (req.socket as { encrypted?: boolean }).encrypted === true;
  const target = req.url ?? "/";
  let url: URL;
  try {
    url = target.startsWith("/") ? new URL(`${encrypted ? "https" : "http"}://${req.headers.host ?? "localhost"}${target}`) : new URL(target);
  } catch {
    try {
      url = new URL(`${encrypted ? "https" : "http"}://localhost${target.startsWith("/") ? target : "/"}`);
    } catch {
      return null;
    }
  }
  const headers = new Headers();
  try {
    const raw = req.rawHeaders;
    for (let i = 0; i + 1 < raw.length; i += 2) headers.append(raw[i]!, raw[i + 1]!);
  } catch {
    return null;
  }
  return new Request(url, { method: req.method ?? "GET", headers });
}

/** True for a WebSocket upgrade by the data plane's one definition (Connection: upgrade and Upgrade: websocket). */
export const isWebSocketRequest = (req: IncomingMessage): boolean => isWebSocketUpgrade(req.headers.connection, req.headers.upgrade);

const KEY = /^[+/0-9A-Za-z]{22}==$/;
const TOKEN = /^[!#$%&'*+\-.^_`|~0-9A-Za-z]+$/;

/**
 * The subprotocols the client asked for, in order; null when Sec-WebSocket-Protocol is malformed
 * (empty items, non-token characters, duplicates).
 */
export function requestedProtocols(req: IncomingMessage): string[] | null {
  const header = req.headers["sec-websocket-protocol"];
  if (header === undefined) return [];
  const protocols = header.split(",").map((p) => p.trim());
  if (protocols.some((p) => !TOKEN.test(p)) || new Set(protocols).size !== protocols.length) return null;
  return protocols;
}

/**
 * True when the handshake is one the `ws` server will complete: GET, a valid Sec-WebSocket-Key,
 * version 13 or 8, well-formed subprotocols. Checked before anything reaches a worker, so a
 * malformed handshake never activates an instance.
 */
export function isWellFormedHandshake(req: IncomingMessage): boolean {
  const version = req.headers["sec-websocket-version"];
  return (
    req.method === "GET" &&
    KEY.test(req.headers["sec-websocket-key"] ?? "") &&
    (version === "13" || version === "8") &&
    requestedProtocols(req) !== null
  );
}
