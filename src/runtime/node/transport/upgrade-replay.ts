import type { IncomingMessage, Server } from "node:http";
import type { Duplex } from "node:stream";

/**
 * Node hands every request with `Connection: upgrade` and an Upgrade header to the server's
 * 'upgrade' listener, whatever the protocol; Pinboard proxies only WebSockets and treats any other
 * upgrade (h2c from `curl --http2`, a TLS upgrade, a made-up token) as a plain request whose
 * Upgrade is hop-by-hop. Such a request goes back to the HTTP server: the bytes Node parsed are
 * written again without the upgrade (Upgrade dropped, the `upgrade` token taken out of Connection),
 * put back in front of whatever the client sent after them, and the socket is handed to the
 * server as a new connection, whose parser reads it as an ordinary request (body, keep-alive and
 * pipelining included).
 */
export function replayAsPlainRequest(
  server: Pick<Server, "emit">,
  req: IncomingMessage,
  socket: Duplex,
  head: Buffer,
): void {
  const lines = [`${req.method ?? "GET"} ${req.url ?? "/"} HTTP/${req.httpVersion}`];
  const raw = req.rawHeaders;
  for (let i = 0; i + 1 < raw.length; i += 2) {
    const name = raw[i]!;
    const lower = name.toLowerCase();
    if (lower === "upgrade") continue;
    if (lower === "connection") {
      const kept = raw[i + 1]!.split(",")
        .map((t) => t.trim())
        .filter((t) => t !== "" && t.toLowerCase() !== "upgrade");
      if (kept.length > 0) lines.push(`${name}: ${kept.join(", ")}`);
      continue;
    }
    lines.push(`${name}: ${raw[i + 1]!}`);
  }
  // Node decodes header bytes as latin1, so latin1 writes back the bytes the client sent.
  const rebuilt = Buffer.from(`${lines.join("\r\n")}\r\n\r\n`, "latin1");
  socket.unshift(head.length > 0 ? Buffer.concat([rebuilt, head]) : rebuilt);
  server.emit("connection", socket);
}
