/**
 * The environment of the real Node entry (src/node.ts) listening on 127.0.0.1:`port`, for a script
 * or a test that spawns it: this process's PATH and HOME only, `redis` (REDIS_URL or the cluster's
 * variables), the passport secret, warn-level logs, then `more` (which may override any of them).
 */
export function nodeEntryEnv(
  port: number,
  redis: Record<string, string>,
  passportSecret: string,
  more: Record<string, string> = {},
): Record<string, string> {
  return {
    PATH: process.env.PATH ?? "",
    HOME: process.env.HOME ?? "",
    PORT: String(port),
    HOST: "127.0.0.1",
    ...redis,
    PINBOARD_PASSPORT_SECRET: passportSecret,
    PINBOARD_LOG_LEVEL: "warn",
    ...more,
  };
}
