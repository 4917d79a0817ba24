import { RedisReplyError, RedisUnavailableError } from "../redis-errors.ts";

/**
 * How the REST adapter (upstash-redis.ts) reads a failure of @upstash/redis. It sends every command
 * in a POST /pipeline (upstash-batch.ts), so a failure comes in one of two forms:
 *
 * - The whole request failed: a non-2xx answer (401/403 for a wrong or read-only token, 413 past
 *   the request-size limit, 429 past a quota, 5xx from the endpoint or a proxy in front of it), an
 *   answer that is not JSON, or a fetch that failed or timed out (after the client's own retries,
 *   which a metered adapter turns off). None of these is a fault of a command: Redis is
 *   unavailable to this request (503 `redis unavailable, retry`).
 * - One item of the pipeline failed: Redis ran the command and refused it (a script error,
 *   WRONGTYPE, NOSCRIPT…), a reply error (500, or a retry for LOADING/BUSY… per RedisOutageGuard),
 *   unless its text is one of the endpoint's own refusals (an auth or quota error, a size limit
 *   counted per command) or carries no Redis error code at all (the local bridge reporting a
 *   lost connection to its Redis): those are unavailability too.
 *
 * Either way the message is redacted (redis-errors.ts): Upstash writes the whole pipeline, worker
 * secrets included, after `, command was:`.
 */

/** Errors that the REST endpoint itself answers, never Redis about a command. */
const ENDPOINT_REFUSAL = /^(WRONGPASS|NOAUTH|NOPERM)\b|^ERR max .*(exceeded|limit)/i;
/** A Redis error reply starts with its code: `ERR …`, `WRONGTYPE …`, `NOSCRIPT …`. */
const REDIS_CODE = /^[A-Z][A-Z_]+(\s|$)/;

/** A whole POST /pipeline failed (any error @upstash/redis threw from `exec`). */
export function requestFailure(err: unknown): RedisUnavailableError {
  return new RedisUnavailableError(err);
}

/** One pipeline item's `error` text: a reply error, or unavailability when Redis did not judge the command. */
export function itemFailure(text: string): RedisReplyError | RedisUnavailableError {
  const trimmed = text.trim();
  if (ENDPOINT_REFUSAL.test(trimmed) || !REDIS_CODE.test(trimmed)) return new RedisUnavailableError(trimmed);
  return new RedisReplyError(trimmed);
}
