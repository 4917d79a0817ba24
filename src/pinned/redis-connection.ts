import { Redis } from "ioredis";

/** How long the library waits for one Redis command it sends on a connection of its own. */
export const DEFAULT_COMMAND_TIMEOUT_MS = 5000;

/**
 * The library's own ioredis connection to a redis:// URL (the durability store, FencedRedis):
 * - a command is never sent twice: one whose connection died may have run, so it fails instead;
 * - a command gets `commandTimeoutMs` to be answered, then fails;
 * - a server that leaves written commands unanswered twice that long (stopped, or cut off without
 *   a reset: a dropped link) is taken for gone: the socket is dropped and made again, so the
 *   store recovers when the link does instead of waiting on a dead connection forever;
 * - an idle connection is PINGed every `commandTimeoutMs`, so one that died while nothing was
 *   sent is found and made again before the next request needs it, not by that request.
 */
export function ownRedisConnection(url: string, commandTimeoutMs = DEFAULT_COMMAND_TIMEOUT_MS): Redis {
  const redis = new Redis(url, {
    autoResendUnfulfilledCommands: false,
    maxRetriesPerRequest: 0,
    commandTimeout: commandTimeoutMs,
    socketTimeout: 2 * commandTimeoutMs,
    enableAutoPipelining: true,
  });
  const ping = setInterval(() => {
    if (redis.status === "ready") redis.ping().catch(() => {});
  }, commandTimeoutMs);
  ping.unref?.();
  redis.once("end", () => clearInterval(ping));
  return redis;
}
