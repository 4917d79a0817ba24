import { type RequestFraming, requestFraming } from "./framing.ts";
import { isWebSocketUpgrade } from "./header-hygiene.ts";

/**
 * A client's request as the data plane reads it, whatever carries it: a Fetch API `Request` on
 * Workers (and wherever Hono serves the data plane), node:http's own `IncomingMessage` on the
 * Node entry. The core decides from this alone, so neither runtime's objects leak into it.
 */

/** Header lookup by lower-case name, values of repeated fields joined with ", " (as Headers does). */
export interface HeaderSource {
  get(name: string): string | null;
  forEach(callback: (value: string, name: string) => void): void;
}

/** The client's side of a request. */
export interface ClientLink {
  /** True once the client has gone. */
  readonly gone: boolean;
  /** Calls `listener` once if the client goes; returns the way to stop listening. */
  onGone(listener: () => void): () => void;
}

export interface InboundRequest {
  method: string;
  /** The path as the URL parser normalised it (percent-encoding kept). */
  pathname: string;
  /** "" or "?…". */
  search: string;
  /** The URL's host (X-Forwarded-Host of the forward); "" when the client sent no Host. */
  host: string;
  /** "http" or "https" (X-Forwarded-Proto). */
  proto: string;
  headers: HeaderSource;
  /** The TCP peer (the socket's address on Node, CF-Connecting-IP on Workers). */
  peer: string;
  client: ClientLink;
  /** A WebSocket upgrade by the one definition (isWebSocketUpgrade). */
  upgrade: boolean;
  /** How the client delimited its body (judged from the headers: a body streams once). */
  framing: RequestFraming;
  /** The runtime edge's own claims about the client (RuntimeInfo.edgeHeaders), forwarded as they are. */
  edge?: Readonly<Record<string, string>>;
}

/** The headers of a node:http message (`rawHeaders`) joined as Headers joins them, in one pass. */
export class RawHeaderSource implements HeaderSource {
  private readonly fields: Record<string, string> = Object.create(null) as Record<string, string>;

  constructor(raw: readonly string[]) {
    for (let i = 0; i + 1 < raw.length; i += 2) {
      const name = raw[i]!.toLowerCase();
      const held = this.fields[name];
      this.fields[name] = held === undefined ? raw[i + 1]! : `${held}, ${raw[i + 1]!}`;
    }
  }

  get(name: string): string | null {
    return this.fields[name] ?? null;
  }

  forEach(callback: (value: string, name: string) => void): void {
    for (const name in this.fields) callback(this.fields[name]!, name);
  }
}

/**
 * The client link of a Fetch API request: its signal (Workers aborts it when the client goes). A
 * class for the reason the Node entry's link is one (src/runtime/node/transport/client-link.ts): what an
 * object literal with a getter reaches outlives young-generation collections.
 */
class SignalLink implements ClientLink {
  constructor(private readonly signal: AbortSignal) {}

  get gone(): boolean {
    return this.signal.aborted;
  }

  onGone(listener: () => void): () => void {
    this.signal.addEventListener("abort", listener, { once: true });
    return () => this.signal.removeEventListener("abort", listener);
  }
}

export function signalLink(signal: AbortSignal): ClientLink {
  return new SignalLink(signal);
}

/** A Fetch API request as the data plane reads it. */
export function inboundOfRequest(
  request: Request,
  peer: string,
  edge?: Readonly<Record<string, string>>,
): InboundRequest {
  const url = new URL(request.url);
  const { headers } = request;
  return {
    method: request.method,
    pathname: url.pathname,
    search: url.search,
    // The Host header, which the runtime built the URL from (the URL always has a host; a
    // request that came without Host has none to name).
    host: headers.get("host") ?? "",
    proto: url.protocol.replace(/:$/, ""),
    headers,
    peer,
    client: signalLink(request.signal),
    upgrade: isWebSocketUpgrade(headers.get("connection"), headers.get("upgrade")),
    framing: requestFraming(request.method, headers, request.body !== null),
    ...(edge ? { edge } : {}),
  };
}
