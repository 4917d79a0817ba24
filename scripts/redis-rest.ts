/**
 * An Upstash-REST-compatible HTTP bridge over a TCP Redis, for local development and tests: it
 * lets `@upstash/redis` (the Workers entry's client) talk to a real redis-server.
 *
 *   REDIS_URL=redis://127.0.0.1:6380 UPSTASH_REDIS_REST_TOKEN=dev npm run redis-rest
 *
 * Over a Redis Cluster (REDIS_CLUSTER_NODES=host:port,…, or `clusterNodes`) each command goes to
 * the node serving its first key (a keyless one to any node), a /pipeline runs its commands one
 * after another, and a /multi-exec must keep to one hash slot, as on the cluster itself.
 *
 * Serves what @upstash/redis 1.39 sends: `POST /` (one command), `POST /pipeline` (several,
 * not atomic), `POST /multi-exec` (one MULTI/EXEC), with `Authorization: Bearer <token>` and
 * optional `Upstash-Encoding: base64`. Like Upstash it refuses a missing or wrong token (401
 * `WRONGPASS …`) and a body over its max request size (413 `ERR max request size exceeded`,
 * 1,000,000 bytes unless `maxBodyBytes` says otherwise). Path-style commands (`GET /get/k`) and the SSE endpoints
 * (`/subscribe`, `/monitor`) are not served: the client only uses the latter for pub/sub.
 */
import { createHash, timingSafeEqual } from "node:crypto";
import { realpathSync } from "node:fs";
import { createServer, type IncomingMessage, type ServerResponse } from "node:http";
import { fileURLToPath } from "node:url";
import { Cluster, Redis, ReplyError } from "ioredis";
import {
  BadRequest,
  errorBody,
  parseCommand,
  parseCommands,
  type RedisCommand,
  readBody,
  resultBody,
} from "./redis-rest/wire.ts";

export interface RedisRestOptions {
  /** A single Redis server; or else `clusterNodes`. */
  redisUrl?: string;
  /** Seed nodes ("host:port") of a Redis Cluster. */
  clusterNodes?: string[];
  token: string;
  /** Interface to listen on; 127.0.0.1 by default. */
  host?: string;
  /** Port to listen on; a free one chosen by the kernel when omitted. */
  port?: number;
  /** The largest request body served (413 `ERR max request size exceeded` past it); MAX_BODY_BYTES by default. */
  maxBodyBytes?: number;
  /**
   * Added before each request is served, as the network to a regional Upstash adds it (the bench's
   * `workerd-hot, REST +2 ms` row); none by default.
   */
  delayMs?: number;
}

export interface RedisRestServer {
  /** Base URL for UPSTASH_REDIS_REST_URL, e.g. http://127.0.0.1:8079 */
  url: string;
  port: number;
  /** Changes the token the bridge accepts, as rotating it in the Upstash console does (clients holding the old one get 401). */
  setToken(token: string): void;
  /** How many HTTP requests the bridge has received so far (each a subrequest of a Worker). */
  requests(): number;
  close(): Promise<void>;
}

/**
 * The largest request body served by default: 1,000,000 bytes, Upstash's max request size on its
 * free tier as Pinboard's budget was chosen (1 MB; paid plans allow 10 MB), so that local runs and
 * tests meet the strictest limit a deployment may have. The REST adapter keeps each request under
 * 900,000 bytes (src/redis/rest/upstash-batch.ts).
 */
export const MAX_BODY_BYTES = 1_000_000;
/** What Upstash answers (HTTP 401) to a missing or wrong token. */
export const UNAUTHORIZED = "WRONGPASS invalid or missing auth token";

type Outcome = { error: Error } | { result: unknown };

export async function startRedisRest(options: RedisRestOptions): Promise<RedisRestServer> {
  // RESP2 like Upstash (Lua false is nil, maps are flat arrays); integers as strings so every
  // digit survives and they can be told apart from string replies, which stay Buffers.
  const connection = { protocol: 2 as const, stringNumbers: true, maxRetriesPerRequest: 1 };
  const clustered = !!options.clusterNodes?.length;
  let redis: Redis | Cluster;
  if (options.clusterNodes?.length) {
    const seeds = options.clusterNodes.map((node) => {
      const colon = node.lastIndexOf(":");
      return { host: node.slice(0, colon), port: Number(node.slice(colon + 1)) };
    });
    // Without the offline queue a command fails at once (502) while no node can be reached,
    // instead of waiting for the cluster to come back.
    redis = new Cluster(seeds, { lazyConnect: true, enableOfflineQueue: false, redisOptions: connection });
  } else if (options.redisUrl) {
    redis = new Redis(options.redisUrl, { ...connection, lazyConnect: true });
  } else {
    throw new Error("startRedisRest needs redisUrl or clusterNodes");
  }
  redis.on("error", () => {});
  try {
    await redis.connect();
  } catch (err) {
    redis.disconnect();
    throw err;
  }

  let expected = digest(options.token);
  const maxBodyBytes = options.maxBodyBytes ?? MAX_BODY_BYTES;
  const server = createServer((req, res) => {
    handle(req, res).catch((err: unknown) => {
      console.error("redis-rest: request failed", err);
      if (!res.headersSent) send(res, 500, errorBody("internal error"));
      else res.destroy();
    });
  });

  let received = 0;
  const delayMs = options.delayMs ?? 0;
  async function handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    received++;
    if (delayMs > 0) await new Promise((resolve) => setTimeout(resolve, delayMs));
    const bearer = /^Bearer +(.+)$/i.exec(req.headers.authorization ?? "")?.[1];
    if (bearer === undefined || !timingSafeEqual(digest(bearer), expected)) {
      return send(res, 401, errorBody(UNAUTHORIZED));
    }
    const path = new URL(req.url ?? "/", "http://bridge").pathname.replace(/(.)\/+$/, "$1");
    if (path !== "/" && path !== "/pipeline" && path !== "/multi-exec") {
      return send(res, 404, errorBody(`ERR unknown endpoint ${path}`));
    }
    if (req.method !== "POST") return send(res, 405, errorBody("ERR only POST is supported"));

    const raw = await readBody(req, maxBodyBytes);
    if (raw === null) {
      res.setHeader("Connection", "close");
      return send(res, 413, errorBody("ERR max request size exceeded"));
    }
    const base64 = String(req.headers["upstash-encoding"] ?? "").toLowerCase() === "base64";
    try {
      const body: unknown = JSON.parse(raw.toString("utf8"));
      if (path === "/") return await single(res, parseCommand(body), base64);
      if (path === "/pipeline") return await pipeline(res, parseCommands(body), base64);
      return await multiExec(res, parseCommands(body), base64);
    } catch (err) {
      if (err instanceof BadRequest) return send(res, 400, errorBody(err.message));
      if (err instanceof SyntaxError) return send(res, 400, errorBody("ERR request body is not valid JSON"));
      throw err;
    }
  }

  async function single(res: ServerResponse, command: RedisCommand, base64: boolean): Promise<void> {
    const outcome = await call(command);
    if ("result" in outcome) return send(res, 200, resultBody(outcome.result, base64));
    send(res, statusOf(outcome.error), errorBody(outcome.error.message));
  }

  async function pipeline(res: ServerResponse, commands: RedisCommand[], base64: boolean): Promise<void> {
    // ioredis writes the commands in order on one connection: a pipeline, not a transaction. A
    // cluster has one connection per node, so there each command waits for the one before it.
    const outcomes: Outcome[] = [];
    if (clustered) for (const command of commands) outcomes.push(await call(command));
    else outcomes.push(...(await Promise.all(commands.map(call))));
    send(res, 200, `[${outcomes.map((o) => itemBody(o, base64)).join(",")}]`);
  }

  async function multiExec(res: ServerResponse, commands: RedisCommand[], base64: boolean): Promise<void> {
    const tx = redis.multi();
    for (const { name, args } of commands) tx.callBuffer(name, ...args);
    let replies: [Error | null, unknown][] | null;
    try {
      replies = await tx.exec();
    } catch (err) {
      // EXECABORT: a command was refused while queueing, so nothing ran.
      const error = asError(err);
      const causes = (error as { previousErrors?: Error[] }).previousErrors ?? [];
      const detail = causes.length ? ` ${causes.map((e) => e.message.trim()).join("; ")}` : "";
      return send(res, statusOf(error), errorBody(`${error.message}${detail}`));
    }
    if (!replies) return send(res, 400, errorBody("EXECABORT transaction aborted"));
    const items = replies.map(([error, result]) => itemBody(error ? { error } : { result }, base64));
    send(res, 200, `[${items.join(",")}]`);
  }

  function call({ name, args }: RedisCommand): Promise<Outcome> {
    // ioredis keys its reply transformers (HGETALL to an object, …) by lower-case command
    // name; the upper-case name sends the command and returns the reply untouched.
    return redis.callBuffer(name, ...args).then(
      (result) => ({ result }),
      (err: unknown) => ({ error: asError(err) }),
    );
  }

  try {
    await new Promise<void>((resolve, reject) => {
      server.once("error", reject);
      server.listen(options.port ?? 0, options.host ?? "127.0.0.1", () => resolve());
    });
  } catch (err) {
    redis.disconnect();
    throw err;
  }
  const address = server.address();
  const port = typeof address === "object" && address ? address.port : (options.port ?? 0);

  let closed: Promise<void> | undefined;
  return {
    url: `http://${urlHost(options.host ?? "127.0.0.1")}:${port}`,
    port,
    setToken(token) {
      expected = digest(token);
    },
    requests: () => received,
    close() {
      closed ??= (async () => {
        const stopped = new Promise<void>((resolve) => server.close(() => resolve()));
        server.closeAllConnections();
        await stopped;
        await redis.quit().catch(() => redis.disconnect());
      })();
      return closed;
    },
  };
}

function itemBody(outcome: Outcome, base64: boolean): string {
  return "result" in outcome ? resultBody(outcome.result, base64) : errorBody(outcome.error.message);
}

/** A Redis error reply is the caller's fault (400); anything else (Redis unreachable) is ours. */
function statusOf(error: Error): number {
  return error instanceof ReplyError ? 400 : 502;
}

function asError(err: unknown): Error {
  return err instanceof Error ? err : new Error(String(err));
}

function digest(text: string): Buffer {
  return createHash("sha256").update(text).digest();
}

function send(res: ServerResponse, status: number, body: string): void {
  res.writeHead(status, {
    "Content-Type": "application/json",
    "Content-Length": Buffer.byteLength(body),
  });
  res.end(body);
}

function urlHost(host: string): string {
  if (host === "0.0.0.0" || host === "") return "127.0.0.1";
  if (host === "::") return "[::1]";
  return host.includes(":") ? `[${host}]` : host;
}

async function main(): Promise<void> {
  const { REDIS_URL: redisUrl, REDIS_CLUSTER_NODES: clusterNodes, UPSTASH_REDIS_REST_TOKEN: token } = process.env;
  if (!(redisUrl || clusterNodes) || !token)
    throw new Error("set REDIS_URL (or REDIS_CLUSTER_NODES) and UPSTASH_REDIS_REST_TOKEN");
  const bridge = await startRedisRest({
    ...(clusterNodes
      ? {
          clusterNodes: clusterNodes
            .split(",")
            .map((n) => n.trim())
            .filter(Boolean),
        }
      : { redisUrl }),
    token,
    port: Number(process.env.PORT ?? 8079),
    host: process.env.HOST ?? "127.0.0.1",
    delayMs: Number(process.env.REDIS_REST_DELAY_MS ?? 0),
  });
  console.log(`UPSTASH_REDIS_REST_URL=${bridge.url}`);
  const stop = () => void bridge.close().then(() => process.exit(0));
  process.once("SIGINT", stop);
  process.once("SIGTERM", stop);
}

function isEntry(): boolean {
  try {
    return !!process.argv[1] && realpathSync(process.argv[1]) === fileURLToPath(import.meta.url);
  } catch {
    return false;
  }
}

if (isEntry()) {
  main().catch((err: unknown) => {
    console.error(`redis-rest: ${err instanceof Error ? err.message : String(err)}`);
    process.exit(1);
  });
}
