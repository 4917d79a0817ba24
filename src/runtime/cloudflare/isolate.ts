import type { Context, Hono } from "hono";
import { createPinboard } from "../../app/app.ts";
import { buildDeps } from "../../app/bootstrap.ts";
import { ConfigError, parseConfig } from "../../config/config.ts";
import type { AppDeps, AppEnv } from "../../deps/app-deps.ts";
import type { RuntimeInfo } from "../../deps/runtime-info.ts";
import { UpstashRedis } from "../../redis/rest/upstash-redis.ts";
import { workerdUploadPipe } from "./upload-pipe.ts";

/**
 * One isolate's Pinboard: env bindings (wrangler.toml vars and secrets) become a parsed config
 * and an @upstash/redis client once per isolate, rebuilt when the env object changes.
 */
export type Env = Record<string, unknown>;

export interface Isolate {
  app: Hono<AppEnv>;
  /** With PINBOARD_ADMIN_HOSTNAME: the operator surface, answered on that hostname only. */
  admin?: { hostname: string; app: Hono<AppEnv> };
  deps: AppDeps;
}

let isolate: Isolate | undefined;
let isolateEnv: Env | undefined;

export function isolateFor(env: Env): Isolate {
  if (isolate && isolateEnv === env) return isolate;
  const config = parseConfig(env);
  if (!config.redis.restUrl || !config.redis.restToken) {
    throw new ConfigError([
      "UPSTASH_REDIS_REST_URL: required on Workers (with UPSTASH_REDIS_REST_TOKEN). Locally, run `npm run dev` " +
        "(it starts a Redis behind a REST bridge and passes both), " +
        "or set UPSTASH_REDIS_REST_URL / UPSTASH_REDIS_REST_TOKEN " +
        "(.dev.vars or --var locally; wrangler secret put UPSTASH_REDIS_REST_TOKEN when deployed)",
    ]);
  }
  if (!config.passport.secret && !config.passport.jwks) {
    throw new ConfigError([
      "PINBOARD_PASSPORT_SECRET: required on Workers, or PINBOARD_PASSPORT_JWKS. Locally, run `npm run dev` " +
        "(it mints a development key), or put it in .dev.vars; deployed: wrangler secret put PINBOARD_PASSPORT_SECRET",
    ]);
  }
  const redis = new UpstashRedis({
    url: config.redis.restUrl,
    token: config.redis.restToken,
    timeoutMs: config.redis.timeoutMs,
  });
  const deps = buildDeps({ config, redis, runtime: cloudflareRuntime() });
  // CF-Connecting-IP is the peer here: Cloudflare's edge sets it (and drops a client's own).
  const adminHostname = config.admin.hostname;
  const built = createPinboard(deps, { peerAddress: cloudflarePeer, separateAdmin: adminHostname !== undefined });
  isolate = {
    app: built.app,
    deps,
    ...(adminHostname !== undefined && built.admin ? { admin: { hostname: adminHostname, app: built.admin } } : {}),
  };
  isolateEnv = env;
  return isolate;
}

/**
 * The app a request goes to: with PINBOARD_ADMIN_HOSTNAME, that hostname gets the operator surface
 * (console, registry, /openapi.json) and every other hostname health and the data plane, so no
 * worker page is ever served on the console's origin.
 */
export function appFor(current: Isolate, request: Request): Hono<AppEnv> {
  if (current.admin === undefined) return current.app;
  return new URL(request.url).hostname === current.admin.hostname ? current.admin.app : current.app;
}

export function configFailure(err: unknown): Response {
  const message = err instanceof ConfigError ? err.message : "internal error";
  console.error(err instanceof Error ? err.message : String(err));
  return new Response(
    JSON.stringify({ error: message.startsWith("invalid configuration") ? "misconfigured" : "internal error" }),
    {
      status: 500,
      headers: { "content-type": "application/json" },
    },
  );
}

/** Subrequests per invocation on the Workers Free plan (each fetch and each Redis REST call counts). */
const FREE_PLAN_SUBREQUESTS = 50;

/**
 * What the core may ask of an isolate: background work outlives a request only through its
 * waitUntil, workerd's fetch hands over a Content-Encoding body undecoded, a forwarded body goes
 * through workerd's own streams, the plan caps subrequests, and requests come through Cloudflare's
 * edge, which tells the client's scheme and country (cloudflareEdgeHeaders).
 */
function cloudflareRuntime(): RuntimeInfo {
  return {
    label: "workers",
    backgroundWork: "request-bound",
    fetchDecodesBodies: false,
    uploadPipe: workerdUploadPipe,
    startedAt: Date.now(),
    subrequestsPerInvocation: FREE_PLAN_SUBREQUESTS,
    edgeHeaders: cloudflareEdgeHeaders,
  };
}

/**
 * What Cloudflare's edge knows of the client, as the headers it documents: CF-Visitor (the scheme)
 * and CF-IPCountry (request.cf.country). Written from the edge's own facts, never taken from the
 * request's headers: Cloudflare passes a client's own CF-IPCountry through when IP Geolocation is off.
 */
export function cloudflareEdgeHeaders(request: Request): Record<string, string> {
  const scheme = request.url.startsWith("https:") ? "https" : "http";
  const country = (request as { cf?: { country?: unknown } }).cf?.country;
  return {
    "cf-visitor": `{"scheme":"${scheme}"}`,
    ...(typeof country === "string" ? { "cf-ipcountry": country } : {}),
  };
}

/** The peer on Workers: CF-Connecting-IP, which Cloudflare's edge sets (any client can send it elsewhere). */
export const cloudflarePeer = (c: Context<AppEnv>): string => c.req.header("cf-connecting-ip") ?? "";
