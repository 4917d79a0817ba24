import type { IncomingMessage } from "node:http";
import { requestFraming } from "../../../data-plane/framing.ts";
import { isWebSocketUpgrade } from "../../../data-plane/header-hygiene.ts";
import { type ClientLink, type InboundRequest, RawHeaderSource } from "../../../data-plane/inbound.ts";
import { firstRawHeader } from "./raw-header.ts";

/** Request targets that need no URL parser: origin-form, plain characters, no dot segments. */
const PLAIN_TARGET = /^\/[!$&-;=?-[\]_a-z~]*$/;
const DOT_SEGMENT = /\/\.\.?(?:[/?#]|$)/;
const PLAIN_HOST = /^[a-z0-9._-]+(?::\d{1,5})?$/;

export interface RequestTarget {
  pathname: string;
  search: string;
  host: string;
}

/**
 * The path, query and host of a request as the WHATWG URL parser (what the Fetch API and the
 * Hono adapter use) reads them: dot segments resolved, a host lower-cased and its default port
 * dropped. The common target skips the parser. Null when no URL can be made of it (a backslash
 * in the path, an invalid Host): the Hono adapter answers those 400.
 */
export function requestTarget(req: IncomingMessage, defaultHost: string): RequestTarget | null {
  const target = req.url ?? "/";
  const hostHeader = firstRawHeader(req.rawHeaders, "host");
  const rawHost = hostHeader || defaultHost;
  if (
    hostHeader &&
    target.startsWith("/") &&
    PLAIN_TARGET.test(target) &&
    !DOT_SEGMENT.test(target) &&
    PLAIN_HOST.test(rawHost) &&
    !rawHost.endsWith(":80")
  ) {
    const query = target.indexOf("?");
    return query < 0
      ? { pathname: target, search: "", host: rawHost }
      : { pathname: target.slice(0, query), search: normalSearch(target.slice(query)), host: rawHost };
  }
  const backslash = target.indexOf("\\");
  const query = target.indexOf("?");
  if (backslash !== -1 && (query === -1 || backslash < query)) return null;
  try {
    const originForm = target.startsWith("/");
    const url = originForm ? new URL(`http://${rawHost}${target}`) : new URL(target);
    if (url.protocol !== "http:" && url.protocol !== "https:") return null;
    // RFC 9112 §3.2.2: an absolute-form target's authority is the request's, whatever Host says.
    return { pathname: url.pathname, search: url.search, host: originForm && !hostHeader ? "" : url.host };
  } catch {
    return null;
  }
}

/** "?" alone is no query (URL.search is ""). */
const normalSearch = (search: string): string => (search === "?" ? "" : search);

/** A node:http request as the data plane reads it. */
export function nodeInbound(req: IncomingMessage, target: RequestTarget, client: ClientLink): InboundRequest {
  const headers = new RawHeaderSource(req.rawHeaders);
  const method = req.method ?? "GET";
  return {
    method,
    pathname: target.pathname,
    search: target.search,
    host: target.host,
    proto: (req.socket as { encrypted?: boolean }).encrypted === true ? "https" : "http",
    headers,
    peer: req.socket.remoteAddress ?? "",
    client,
    upgrade: isWebSocketUpgrade(headers.get("connection"), headers.get("upgrade")),
    framing: requestFraming(method, headers),
  };
}
