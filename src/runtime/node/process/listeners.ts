import { createServer, type RequestListener, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import type { Config } from "../../../config/config.ts";

/** How long an idle client connection is kept (announced as Keep-Alive: timeout=65). */
export const CLIENT_KEEP_ALIVE_MS = 65_000;

/**
 * The Node entry's listeners: the data port (the data plane, /healthz, /readyz and, without
 * PINBOARD_ADMIN_PORT, everything else) and, with PINBOARD_ADMIN_PORT, the admin port (the
 * registry, the console, /openapi.json, /metrics and the probes) on its own origin. Every one of
 * them gets the same node:http limits (PINBOARD_HEADERS_TIMEOUT_MS, PINBOARD_REQUEST_TIMEOUT_MS,
 * PINBOARD_MAX_CONNECTIONS): a client that dribbles its headers is answered 408 and cut once the
 * headers timeout passes, and connections past the cap are closed as soon as they are accepted.
 */
export interface Listeners {
  /** The data port's URL, with the base path. */
  url: string;
  /** The admin port's URL, with the base path, when there is one. */
  adminUrl?: string;
  /** Stops accepting, closes idle connections and waits for the busy ones. */
  close(): Promise<void>;
}

export interface ListenerParts {
  /** The data port's request listener. */
  data: RequestListener;
  /** Installs the data port's upgrade handling (the data plane's WebSockets). */
  attach(server: Server): void;
  /** The admin port's request listener, when the operator surface is served apart. */
  admin?: RequestListener;
}

export async function startListeners(config: Config, parts: ListenerParts): Promise<Listeners> {
  const data = createListener(parts.data, config.listeners);
  parts.attach(data);
  const url = httpUrl(await listen(data, config.port, config.host), config.basePath);
  if (parts.admin === undefined || config.admin.port === undefined) return { url, close: () => closeListener(data) };
  // The admin port listens after the data port: with PINBOARD_PROCESSES > 1 the primary takes
  // the first listening address it hears of for the data port's.
  const admin = createListener(parts.admin, config.listeners);
  let adminUrl: string;
  try {
    adminUrl = httpUrl(await listen(admin, config.admin.port, config.host), config.basePath);
  } catch (err) {
    await closeListener(data);
    throw err;
  }
  return { url, adminUrl, close: async () => void (await Promise.all([closeListener(data), closeListener(admin)])) };
}

/**
 * A node:http server with Pinboard's limits. requireHostHeader off: a request without Host gets
 * the protocol's 400 missing Host header from the app, not Node's bare 400. Idle keep-alive
 * connections stay open longer than a load balancer's usual 60 s idle timeout, so a client or
 * balancer never sends on a connection Pinboard has just closed; the headers timeout runs only
 * while a request's headers are arriving (idle keep-alive time does not count), and the request
 * timeout only until the request's body has arrived (never over a response or a WebSocket).
 */
export function createListener(listener: RequestListener, limits: Config["listeners"]): Server {
  const server = createServer(
    {
      requireHostHeader: false,
      headersTimeout: limits.headersTimeoutMs,
      requestTimeout: limits.requestTimeoutMs,
      connectionsCheckingInterval: checkingInterval(limits),
    },
    listener,
  );
  server.keepAliveTimeout = CLIENT_KEEP_ALIVE_MS;
  server.maxConnections = limits.maxConnections;
  return server;
}

/**
 * How often node:http looks for connections past their headers or request timeout (its default,
 * 30 s, would let a slow client outstay a 10 s headers timeout by up to 30 s): a quarter of the
 * shorter timeout, between 50 ms and 1 s. Only connections with a request in progress are looked at.
 */
export function checkingInterval(limits: Config["listeners"]): number {
  const shortest =
    limits.requestTimeoutMs > 0 ? Math.min(limits.headersTimeoutMs, limits.requestTimeoutMs) : limits.headersTimeoutMs;
  return Math.max(50, Math.min(1000, Math.floor(shortest / 4)));
}

async function listen(server: Server, port: number, host: string): Promise<AddressInfo> {
  await new Promise<void>((resolve, reject) => {
    server.once("listening", resolve);
    server.once("error", reject);
    server.listen(port, host);
  });
  return server.address() as AddressInfo;
}

function httpUrl(address: AddressInfo, basePath: string): string {
  const host = address.family === "IPv6" ? `[${address.address}]` : address.address;
  return `http://${host}:${address.port}${basePath}`;
}

function closeListener(server: Server): Promise<void> {
  return new Promise<void>((resolve) => {
    if (!server.listening) return resolve();
    server.close(() => resolve());
    server.closeIdleConnections();
  });
}
