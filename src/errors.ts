import type { Context } from "hono";
import type { ContentfulStatusCode } from "hono/utils/http-status";
import { RedisUnavailableError } from "./redis/guarded.ts";

/**
 * The one error type of Pinboard. Routes throw it; `renderError` turns it into the response.
 * `body` is the JSON object the spec prescribes (`{"error": …}` plus flags such as
 * `reregister`), or a plain string for the few text/plain answers of the data plane.
 */
export class PinboardError extends Error {
  readonly status: ContentfulStatusCode;
  readonly body: Record<string, unknown> | string;
  readonly headers: Record<string, string>;

  constructor(
    status: ContentfulStatusCode,
    body: Record<string, unknown> | string,
    headers: Record<string, string> = {},
  ) {
    super(typeof body === "string" ? body : String(body.error ?? status));
    this.name = "PinboardError";
    this.status = status;
    this.body = body;
    this.headers = headers;
  }

  static of(status: ContentfulStatusCode, error: string, extra: Record<string, unknown> = {}): PinboardError {
    return new PinboardError(status, { error, ...extra });
  }

  /** A 503 refusal with `Retry-After: max(1, ceil(remainingMs / 1000))`. */
  static refusal(error: string, remainingMs = 0): PinboardError {
    const seconds = Math.max(1, Math.ceil(remainingMs / 1000));
    return new PinboardError(503, { error }, { "Retry-After": String(seconds) });
  }
}

export const badRequest = (error: string): PinboardError => PinboardError.of(400, error);
export const unauthorized = (): PinboardError => PinboardError.of(401, "unauthorized");
export const forbidden = (error = "forbidden"): PinboardError => PinboardError.of(403, error);
export const notFound = (error = "not found"): PinboardError => PinboardError.of(404, error);
export const unknownSession = (): PinboardError =>
  PinboardError.of(409, "unknown session", { reregister: true });
export const notServing = (): PinboardError => PinboardError.refusal("not the serving fleet");

export interface ErrorLogger {
  error(message: string, fields?: Record<string, unknown>): void;
}

/**
 * The one error handler: a PinboardError renders as itself, Redis being unreachable as 503
 * `redis unavailable, retry`, anything else as a logged 500.
 */
export function renderError(err: unknown, c: Context, log: ErrorLogger & { warn(message: string, fields?: Record<string, unknown>): void }): Response {
  if (err instanceof PinboardError) return errorResponse(err);
  if (err instanceof RedisUnavailableError) {
    log.warn("redis unavailable", { path: new URL(c.req.url).pathname, error: err.message });
    return errorResponse(PinboardError.refusal("redis unavailable, retry"));
  }
  log.error("unhandled error", {
    method: c.req.method,
    path: new URL(c.req.url).pathname,
    error: err instanceof Error ? (err.stack ?? err.message) : String(err),
  });
  return errorResponse(PinboardError.of(500, "internal error"));
}

export function errorResponse(err: PinboardError): Response {
  const isText = typeof err.body === "string";
  const headers = new Headers(err.headers);
  headers.set("content-type", isText ? "text/plain; charset=utf-8" : "application/json");
  return new Response(isText ? (err.body as string) : JSON.stringify(err.body), {
    status: err.status,
    headers,
  });
}
