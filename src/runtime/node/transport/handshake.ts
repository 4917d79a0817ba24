import type { IncomingMessage } from "node:http";
import { isWebSocketUpgrade } from "../../../data-plane/header-hygiene.ts";

/**
 * What the Node entry reads off a raw upgrade request before the data plane decides anything:
 * whether it is a WebSocket handshake at all, and whether that handshake is well formed.
 */

/** True for a WebSocket upgrade by the data plane's one definition (Connection: upgrade and Upgrade: websocket). */
export const isWebSocketRequest = (req: IncomingMessage): boolean =>
  isWebSocketUpgrade(req.headers.connection, req.headers.upgrade);

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
    // Stryker disable next-line StringLiteral: the key pattern refuses "" and any other stand-in for an absent key
    KEY.test(req.headers["sec-websocket-key"] ?? "") &&
    (version === "13" || version === "8") &&
    requestedProtocols(req) !== null
  );
}
