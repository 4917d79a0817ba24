/**
 * The two ways a Redis call fails, as the app core sees them, with messages that are safe to log.
 *
 * A Redis error never carries a command's arguments past the adapters: @upstash/redis writes a
 * failed request as `"<error>, command was: <the whole pipeline as JSON>"`, and that JSON holds
 * worker records (a worker's `secret` and `account`), so every message is cut at Upstash's
 * `, command was:` and capped at MAX_REDIS_ERROR_CHARS before it is kept, thrown or logged.
 */

/** The longest Redis error message Pinboard keeps (and so logs), in characters. */
export const MAX_REDIS_ERROR_CHARS = 300;

const COMMAND_ECHO = ", command was:";

/** A Redis error text without Upstash's command echo (and anything after it), capped. */
export function redactRedisText(text: string): string {
  const echo = text.indexOf(COMMAND_ECHO);
  const kept = echo < 0 ? text : text.slice(0, echo);
  return kept.length > MAX_REDIS_ERROR_CHARS ? `${kept.slice(0, MAX_REDIS_ERROR_CHARS)}…` : kept;
}

/** The safe message of anything a Redis client threw. */
export function redisErrorText(err: unknown): string {
  return redactRedisText(err instanceof Error ? err.message : String(err));
}

/**
 * A stack trace fit for a log line: each line's Upstash command echo removed (the frames below
 * the message are kept: they name code, never data), the whole capped at 4000 characters.
 */
export function redactStack(stack: string): string {
  const lines = stack.split("\n").map((line) => {
    const echo = line.indexOf(COMMAND_ECHO);
    return echo < 0 ? line : line.slice(0, echo);
  });
  const joined = lines.join("\n");
  return joined.length > 4000 ? `${joined.slice(0, 4000)}…` : joined;
}

/**
 * What ioredis says of a command whose connection closed under it, with retries per request set to
 * 0 so that nothing is sent twice (src/runtime/node/redis/ioredis-clients.ts): its own words name
 * a retry limit, which reads like a misconfiguration in a log.
 */
const LOST_WITH_ITS_CONNECTION = "connection lost before the reply; the command is not sent again";

function unavailableText(cause: unknown): string {
  return cause instanceof Error && cause.name === "MaxRetriesPerRequestError"
    ? LOST_WITH_ITS_CONNECTION
    : redisErrorText(cause);
}

/** Redis could not be reached or could not answer in time; the request may be retried. */
export class RedisUnavailableError extends Error {
  constructor(cause: unknown) {
    // The cause itself is not kept: its message and its properties (a client's `command`) may hold arguments.
    super(`redis unavailable: ${unavailableText(cause)}`);
    this.name = "RedisUnavailableError";
  }
}

/**
 * Redis ran the command and refused it (a script error, WRONGTYPE, …): a fault of Pinboard's,
 * answered 500 unless it names a transient state. Named "ReplyError" like the TCP client's own.
 */
export class RedisReplyError extends Error {
  constructor(message: string) {
    super(redactRedisText(message));
    this.name = "ReplyError";
  }
}
