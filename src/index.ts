/**
 * `pinboard`: the app for embedding, runtime-neutral (no `node:*`). Build the dependencies with
 * `buildDeps` around a RedisPort (UpstashRedis here, TcpRedis from `pinboard/node`), then serve
 * `createPinboard(deps, …).app.fetch` on any fetch-based server. `pinboard/node` runs the whole
 * Node entry (`startNode`); `pinboard/worker` is the Cloudflare Workers entry.
 */

export { type AppDeps, type AppOptions, createPinboard, type PinboardApp, PinboardError } from "./app/app.ts";
export { type BootstrapOptions, buildDeps } from "./app/bootstrap.ts";
export { type Config, ConfigError, configVariableNames, parseConfig } from "./config/config.ts";
export type { RuntimeInfo } from "./deps/runtime-info.ts";
export type { RedisPort } from "./redis/port.ts";
export { UpstashRedis, type UpstashRedisOptions } from "./redis/rest/upstash-redis.ts";
