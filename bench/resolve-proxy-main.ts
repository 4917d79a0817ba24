/**
 * plain-resolve: the plain node:http proxy (bench/plain-proxy.ts) that first runs the resolve
 * script for the request's id, as Pinboard's Node entry sends it (ioredis through TcpRedis, the
 * keys and arguments built by src/placement/lua/resolve.ts, single mode, a seed per call), and
 * forwards only a `forward` reply, to BENCH_UPSTREAM like the plain proxy. It is not a baseline:
 * it is what the design's one Redis round trip per forward costs a node:http proxy by itself, so
 * the bench can tell that cost from the rest of what Pinboard does per forward.
 *
 * Environment: BENCH_UPSTREAM, REDIS_URL, and Pinboard's PINBOARD_PREFIX, PINBOARD_SHARDS,
 * PINBOARD_LEASE_TTL_MS, PINBOARD_BALANCE_FACTOR (bench/topology.ts pinboardSettings).
 */
import type { IncomingMessage } from "node:http";
import { resolve } from "../src/placement/lua/index.ts";
import { randomSeed } from "../src/placement/resolver.ts";
import { Keys } from "../src/redis/keys.ts";
import { TcpRedis } from "../src/runtime/node/redis/tcp.ts";
import { childEnv } from "./child-env.ts";
import { startPlainProxy } from "./plain-proxy.ts";
import { singleModeResolve } from "./single-mode-resolve.ts";

const env = (name: string): string => childEnv("resolve-proxy", name);

const redis = new TcpRedis({ url: env("REDIS_URL") });
const keys = new Keys(env("PINBOARD_PREFIX"), Number(env("PINBOARD_SHARDS")));
const leaseTtlMs = Number(env("PINBOARD_LEASE_TTL_MS"));
const balanceFactor = Number(env("PINBOARD_BALANCE_FACTOR"));

/** `/{ns}/{id}/…` → the resolve's verdict: true for a live placement's owner. */
async function resolves(req: IncomingMessage): Promise<boolean> {
  const [, ns = "", id = ""] = (req.url ?? "").split("/", 3);
  const reply = await resolve(
    redis,
    keys,
    singleModeResolve(keys, `/${ns}`, id, { leaseMs: leaseTtlMs, balanceFactor, seed: randomSeed() }),
  );
  return reply.kind === "forward";
}

startPlainProxy(env("BENCH_UPSTREAM"), resolves);
