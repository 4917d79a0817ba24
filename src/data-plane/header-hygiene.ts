import { ATTESTATION_HEADER, EPOCH_HEADER, isLeaseRefusal, REFUSAL_HEADER } from "../contract/header-names.ts";
import { FRAMING_HEADERS } from "./framing.ts";
import type { HeaderSource } from "./inbound.ts";

/**
 * Header hygiene of the forward. Inbound Pinboard-* headers never reach a worker (only Pinboard
 * mints them), X-Forwarded-For is replaced by the observed peer, the other forwarding headers
 * are Pinboard's to set unless the peer is a trusted proxy, hop-by-hop headers are dropped both
 * ways, and responses lose Pinboard-* and gain X-Accel-Buffering: no.
 *
 * CGI and WSGI servers merge `_` into `-` (HTTP_PINBOARD_EPOCH), so a header whose name differs
 * from one of these only by underscores is treated as that header: `Pinboard_Epoch` is dropped
 * like `Pinboard-Epoch`.
 */

const ATTESTATION = ATTESTATION_HEADER.toLowerCase();
const EPOCH = EPOCH_HEADER.toLowerCase();
const REFUSAL = REFUSAL_HEADER.toLowerCase();

const HOP_BY_HOP = new Set([
  "connection",
  "keep-alive",
  "proxy-authenticate",
  "proxy-authorization",
  "proxy-connection",
  "te",
  "trailer",
  "transfer-encoding",
  "upgrade",
]);

/**
 * What a Connection value can never remove: the message's framing and Host, which only Pinboard
 * and its transports write (a `Connection: content-length` once left a body unframed).
 */
const UNNAMEABLE = new Set(["content-length", "transfer-encoding", "host"]);

const NO_TOKENS: ReadonlySet<string> = new Set();
/** The last Connection value read and its tokens: clients send the same one request after request. */
let lastConnection = "";
let lastTokens = NO_TOKENS;

/** The header names a Connection value lists (they are hop-by-hop for this connection only). */
function connectionTokens(connection: string): ReadonlySet<string> {
  if (connection === "") return NO_TOKENS;
  if (connection === lastConnection) return lastTokens;
  const tokens = new Set<string>();
  for (const token of connection.split(",")) {
    const t = token.trim().toLowerCase();
    if (t !== "" && !UNNAMEABLE.has(t)) tokens.add(t);
  }
  lastConnection = connection;
  lastTokens = tokens;
  return tokens;
}

/**
 * The one definition of an upgrade, for both entries and both paths: Connection carries the
 * `upgrade` token and Upgrade names websocket (the only protocol Pinboard proxies). Anything else
 * is a plain request, whose Upgrade is dropped as hop-by-hop.
 */
export function isWebSocketUpgrade(connection: string | null | undefined, upgrade: string | null | undefined): boolean {
  return (
    upgrade != null &&
    upgrade.trim().toLowerCase() === "websocket" &&
    connection != null &&
    connectionTokens(connection).has("upgrade")
  );
}

/**
 * What a proxy in front of the worker asserts about the client (its address, scheme or country)
 * or the original request (its host, path or URL); only a trusted peer may send them, and a
 * client's own never reaches a worker. Frameworks and proxies read all of these (X-Forwarded-Prefix
 * and -Uri rewrite paths, True-Client-IP and X-Client-IP name the client, X-Original-URL overrides
 * routing, Front-End-Https and X-Url-Scheme claim https, X-Host the host).
 */
export const FORWARDING_HEADERS: readonly string[] = [
  "x-forwarded-for",
  "x-forwarded-host",
  "x-forwarded-proto",
  "x-forwarded-protocol",
  "x-forwarded-port",
  "x-forwarded-prefix",
  "x-forwarded-scheme",
  "x-forwarded-ssl",
  "x-forwarded-server",
  "x-forwarded-uri",
  "x-forwarded",
  "forwarded",
  "forwarded-for",
  "x-original-forwarded-for",
  "x-real-ip",
  "true-client-ip",
  "x-client-ip",
  "x-cluster-client-ip",
  "client-ip",
  "x-originating-ip",
  "x-remote-ip",
  "x-remote-addr",
  "x-proxyuser-ip",
  "fastly-client-ip",
  "x-envoy-external-address",
  "front-end-https",
  "x-url-scheme",
  "x-host",
  "x-original-url",
  "x-original-uri",
  "x-original-host",
  "x-rewrite-url",
  "cf-connecting-ip",
  "cf-connecting-ipv6",
  "cf-pseudo-ipv4",
  "cf-ipcountry",
  "cf-visitor",
];

const FORWARDING: ReadonlySet<string> = new Set(FORWARDING_HEADERS);

/** The name as a CGI-style server reads it: underscores are dashes. */
const dashed = (name: string): string => (name.includes("_") ? name.replaceAll("_", "-") : name);

/** Dropped in both directions: hop-by-hop, named by Connection, or Pinboard's own (any spelling). */
const dropped = (name: string, named: ReadonlySet<string>): boolean =>
  HOP_BY_HOP.has(name) || named.has(name) || dashed(name).startsWith("pinboard-");

/**
 * A forwarding header the worker must not see as the client sent it: X-Forwarded-For always
 * (Pinboard sets it), the others unless the peer is a trusted proxy, and an underscore spelling
 * of any of them always (it would shadow the real one in a CGI-style worker).
 */
function untrustedForwarding(name: string, trustedPeer: boolean): boolean {
  const canonical = dashed(name);
  if (!FORWARDING.has(canonical)) return false;
  return canonical !== name || name === "x-forwarded-for" || !trustedPeer;
}

function copyFiltered(source: Headers, skip: (name: string) => boolean): Headers {
  const named = connectionTokens(source.get("connection") ?? "");
  const out = new Headers();
  source.forEach((value, name) => {
    if (dropped(name, named) || skip(name)) return;
    out.append(name, value);
  });
  return out;
}

export interface ForwardHeaderInput {
  peer: string;
  /** The peer is in PINBOARD_TRUSTED_PROXIES: its FORWARDING_HEADERS (X-Forwarded-For aside) pass. */
  trustedPeer: boolean;
  /**
   * The runtime edge's own claims about the client (on Workers, Cloudflare's CF-IPCountry and
   * CF-Visitor from request.cf and the scheme): set last, over whatever the client or a proxy sent.
   */
  edge?: Readonly<Record<string, string>>;
  attestation: string;
  epoch: string;
  /** Keeps `Upgrade` and `Connection: upgrade` for a WebSocket forward. */
  upgrade?: string;
  host?: string;
  proto?: string;
}

/**
 * The request headers of a forward, as a plain object (every fetch and node:http take one; a
 * Headers object would cost a validation per header, twice). Header names arrive lower-cased and
 * combined from Headers; the object has no prototype, so a `__proto__` header is just a name.
 */
export function forwardRequestHeaders(inbound: HeaderSource, input: ForwardHeaderInput): Record<string, string> {
  const named = connectionTokens(inbound.get("connection") ?? "");
  const out = Object.create(null) as Record<string, string>;
  inbound.forEach((value, name) => {
    if (dropped(name, named) || untrustedForwarding(name, input.trustedPeer)) return;
    // Expect: 100-continue is answered between client and Pinboard; fetch refuses to send it on.
    // The framing is the transport's to write, from the request's RequestFraming.
    if (name === "host" || name === "expect" || FRAMING_HEADERS.has(name)) return;
    out[name] = out[name] === undefined ? value : `${out[name]}, ${value}`;
  });
  out["x-forwarded-for"] = input.peer;
  if (input.host && out["x-forwarded-host"] === undefined) out["x-forwarded-host"] = input.host;
  if (input.proto && out["x-forwarded-proto"] === undefined) out["x-forwarded-proto"] = input.proto;
  if (input.edge) for (const name in input.edge) out[name] = input.edge[name]!;
  out[ATTESTATION] = input.attestation;
  out[EPOCH] = input.epoch;
  if (input.upgrade) {
    out.upgrade = input.upgrade;
    out.connection = "upgrade";
  }
  return out;
}

/**
 * Never relayed from a worker: the refusal is Pinboard's to act on, and Service-Worker-Allowed
 * would let one worker's page install a service worker over every path of the shared origin (the
 * console and other namespaces included).
 */
const WORKER_ONLY = new Set([REFUSAL, "service-worker-allowed"]);

/** A 204 has no content and RFC 9110 §8.6 forbids its Content-Length; a worker's is dropped. */
const lengthForbidden = (status: number | undefined, name: string): boolean =>
  status === 204 && name === "content-length";

/**
 * The client-facing copy of a worker's response headers. `decoded` drops Content-Encoding and
 * Content-Length when the HTTP client already decompressed the body (Node's fetch does).
 */
export function forwardResponseHeaders(
  upstream: Headers,
  options: { decoded?: boolean; status?: number } = {},
): Headers {
  const out = copyFiltered(
    upstream,
    (name) =>
      WORKER_ONLY.has(name) ||
      lengthForbidden(options.status, name) ||
      (options.decoded === true && (name === "content-encoding" || name === "content-length")),
  );
  out.set("x-accel-buffering", "no");
  return out;
}

/**
 * forwardResponseHeaders for header lines as received (`name, value, …`, from the Node
 * transport), as a plain object the Node adapter writes without building Headers: the same
 * filtering, names lower-cased, repeated Set-Cookie kept apart and other repeats joined with ", ".
 */
export function forwardResponseRecord(raw: string[], status?: number): Record<string, string | string[]> {
  const names: string[] = [];
  let connection: string | undefined;
  for (let i = 0; i + 1 < raw.length; i += 2) {
    const name = raw[i]!.toLowerCase();
    names.push(name);
    if (name === "connection") connection = connection === undefined ? raw[i + 1]! : `${connection},${raw[i + 1]!}`;
  }
  const named = connectionTokens(connection ?? "");
  const out: Record<string, string | string[]> = Object.create(null) as Record<string, string | string[]>;
  let joined = false;
  for (let i = 0; i + 1 < raw.length; i += 2) {
    const name = names[i >> 1]!;
    if (dropped(name, named) || WORKER_ONLY.has(name) || lengthForbidden(status, name)) continue;
    const value = trimHttpWhitespace(raw[i + 1]!);
    const held = out[name];
    if (held === undefined) out[name] = name === "set-cookie" ? [value] : value;
    else if (Array.isArray(held)) held.push(value);
    else {
      out[name] = `${held}, ${value}`;
      joined = true;
    }
  }
  // Headers trims each value, joins repeats with ", " and trims the joined value again when it is
  // copied: two empty values end as ",".
  if (joined) {
    for (const name of Object.keys(out)) {
      const value = out[name]!;
      if (!Array.isArray(value)) out[name] = trimHttpWhitespace(value);
    }
  }
  out["x-accel-buffering"] = "no";
  return out;
}

/** Tab, line feed, carriage return and space: what Headers trims from a value. */
const isHttpWhitespace = (code: number): boolean => code === 0x20 || code === 0x09 || code === 0x0a || code === 0x0d;

const trimHttpWhitespace = (value: string): string =>
  value === "" || (!isHttpWhitespace(value.charCodeAt(0)) && !isHttpWhitespace(value.charCodeAt(value.length - 1)))
    ? value
    : value.replace(/^[\t\n\r ]+|[\t\n\r ]+$/g, "");

/** True when a header set names a refusal of a new activation. */
export const isActivationRefusal = (status: number, headers: Headers): boolean =>
  isLeaseRefusal(status, headers.get(REFUSAL_HEADER));
