import type { Context } from "hono";
import type { ContentfulStatusCode } from "hono/utils/http-status";
import { RedisUnavailableError, redactRedisText, redactStack } from "../redis/redis-errors.ts";

/**
 * The one error type of Pinboard. Routes throw it; `renderError` turns it into the response.
 * `body` is the JSON object the protocol prescribes (`{"error": …}` plus flags such as
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
export const unknownSession = (): PinboardError => PinboardError.of(409, "unknown session", { reregister: true });
export const notServing = (): PinboardError => PinboardError.refusal("not the serving fleet");

export interface ErrorLogger {
  error(message: string, fields?: Record<string, unknown>): void;
}

/** An answer Pinboard gives itself, in a form every runtime writes directly. */
export interface Answer {
  status: number;
  headers: Record<string, string>;
  /** null: no body at all (the data plane's empty 502). */
  body: string | null;
}

/** Where an error happened, for the log line of a 500 or a Redis outage. */
export interface ErrorSite {
  method: string;
  path: string;
}

/**
 * The one error handler: a PinboardError renders as itself, Redis being unreachable as 503
 * `redis unavailable, retry`, anything else as a logged 500. Both entries and both data-plane
 * paths (HTTP and upgrades) answer through it.
 */
export function errorAnswer(
  err: unknown,
  site: ErrorSite,
  log: ErrorLogger & { warn(message: string, fields?: Record<string, unknown>): void },
): Answer {
  if (err instanceof PinboardError) return answerOf(err);
  if (err instanceof RedisUnavailableError) {
    log.warn("redis unavailable", { path: site.path, error: err.message });
    return answerOf(PinboardError.refusal("redis unavailable, retry"));
  }
  // Redacted like every Redis error: a client error that got here unwrapped must not log a command's arguments.
  const error = err instanceof Error ? redactStack(err.stack ?? err.message) : redactRedisText(String(err));
  log.error("unhandled error", { method: site.method, path: site.path, error });
  return answerOf(PinboardError.of(500, "internal error"));
}

/** errorAnswer for a Hono route, as a Response. */
export function renderError(
  err: unknown,
  c: Context,
  log: ErrorLogger & { warn(message: string, fields?: Record<string, unknown>): void },
): Response {
  return answerResponse(errorAnswer(err, { method: c.req.method, path: new URL(c.req.url).pathname }, log));
}

/** The answer a PinboardError renders as: JSON, or text/plain for the data plane's text bodies. */
export function answerOf(err: PinboardError): Answer {
  const isText = typeof err.body === "string";
  const headers: Record<string, string> = {};
  for (const [name, value] of Object.entries(err.headers)) headers[name.toLowerCase()] = value;
  headers["content-type"] = isText ? "text/plain; charset=utf-8" : "application/json";
  return { status: err.status, headers, body: isText ? (err.body as string) : JSON.stringify(err.body) };
}

/** A plain-text answer of the data plane's own (502 bad gateway, 504 upstream timeout), or an empty one. */
export function textAnswer(status: number, body: string | null): Answer {
  return { status, headers: body === null ? {} : { "content-type": "text/plain; charset=utf-8" }, body };
}

export function answerResponse(answer: Answer): Response {
  return new Response(answer.body, { status: answer.status, headers: answer.headers });
}

export function errorResponse(err: PinboardError): Response {
  return answerResponse(answerOf(err));
}
