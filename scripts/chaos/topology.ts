import { join } from "node:path";
import { mintCredential } from "../../src/auth/mint.ts";
import { type EmbeddedRedis, startEmbeddedRedis } from "../../src/runtime/node/dev-store/embedded-redis.ts";
import { freePort } from "../../src/runtime/node/process/free-port.ts";
import { type RedisCluster, startRedisCluster } from "../../test/support/redis-cluster.ts";
import { type FaultProxy, startFaultProxy } from "./fault-proxy.ts";
import type { Layer } from "./layers.ts";
import { ManagedProcess } from "./processes.ts";

/**
 * Everything a campaign runs, on loopback: the placement Redis (one server, or a 3-primary Cluster
 * with a replica each), the durability store's Redis, the "user database" Redis, two Pinboard
 * nodes and the workers. Each Pinboard node reaches a single Redis through a fault proxy of its
 * own; each worker is reached through one (its advertise URL) and reaches its store through
 * another, so a fault can cut one link at a time.
 */

export interface TopologyOptions {
  redis: "single" | "cluster";
  workers: number;
  leaseTtlMs: number;
  /** The control run: workers with the fence turned off. */
  noFence: boolean;
  /** The protection layers the workers keep on (layers.ts); all when absent. */
  layers?: readonly Layer[];
  logDir: string;
}

export interface PinboardNode {
  index: number;
  url: string;
  process: ManagedProcess;
  /** Between this node and a single Redis (none on a Cluster). */
  redisProxy?: FaultProxy;
}

export interface ChaosWorker {
  id: string;
  process: ManagedProcess;
  /** Pinboard reaches the worker through it (its advertise URL). */
  advertiseProxy: FaultProxy;
  /** The worker reaches its durability store through it. */
  storeProxy: FaultProxy;
  /** The setting of its injected clock (chaos-clock.ts), read at start and on SIGUSR2. */
  clockFile: string;
}

export interface Topology {
  options: TopologyOptions;
  single?: EmbeddedRedis;
  cluster?: RedisCluster;
  durable: EmbeddedRedis;
  userDb: EmbeddedRedis;
  pinboards: PinboardNode[];
  workers: ChaosWorker[];
  servedLog: string;
  userDbLog: string;
}

export const SECRET = "chaos-campaign-passport-secret-0123456789";
/** cluster-node-timeout: how long a silent primary goes before its replica takes over (Redis' default: 15 s). */
const CLUSTER_NODE_TIMEOUT_MS = 5000;
/** Pinboard's forward timeout in the campaign; clients wait a little longer (run.ts). */
export const FORWARD_TIMEOUT_MS = 15_000;

export async function startTopology(options: TopologyOptions): Promise<Topology> {
  const [durable, userDb] = await Promise.all([startEmbeddedRedis(), startEmbeddedRedis()]);
  const topology: Topology = {
    options,
    durable,
    userDb,
    pinboards: [],
    workers: [],
    servedLog: join(options.logDir, "served.jsonl"),
    userDbLog: join(options.logDir, "user-db.jsonl"),
  };
  if (options.redis === "cluster")
    topology.cluster = await startRedisCluster({ primaries: 3, replicas: 1, nodeTimeoutMs: CLUSTER_NODE_TIMEOUT_MS });
  else topology.single = await startEmbeddedRedis();
  for (const index of [0, 1]) topology.pinboards.push(await startPinboardNode(topology, index));
  const credential = await mintCredential({
    secret: SECRET,
    sub: "chaos",
    scopes: ["pinboard:worker"],
    pinboard: { namespaces: ["*"], allowedBackendHosts: ["*"] },
    ttlSeconds: 3600,
  });
  for (let i = 1; i <= options.workers; i++)
    topology.workers.push(await startChaosWorker(topology, `w${i}`, credential));
  return topology;
}

async function startPinboardNode(topology: Topology, index: number): Promise<PinboardNode> {
  const { options } = topology;
  const port = await freePort();
  const redisProxy = topology.single
    ? await startFaultProxy(`pinboard${index}-redis`, "127.0.0.1", topology.single.port)
    : undefined;
  const redisEnv: Record<string, string> = topology.cluster
    ? { REDIS_CLUSTER_NODES: topology.cluster.nodes }
    : { REDIS_URL: `redis://127.0.0.1:${redisProxy!.port}` };
  const url = `http://127.0.0.1:${port}`;
  const process = new ManagedProcess(
    `pinboard${index}`,
    "src/node.ts",
    {
      PORT: String(port),
      HOST: "127.0.0.1",
      ...redisEnv,
      PINBOARD_DURABLE_REDIS_URL: topology.durable.url,
      PINBOARD_PASSPORT_SECRET: SECRET,
      PINBOARD_LEASE_TTL_MS: String(options.leaseTtlMs),
      PINBOARD_SWEEP_INTERVAL_MS: "1000",
      // Longer than a paused worker sleeps (lease + 3 s at most): what a zombie answers reaches
      // the client, so the checker sees it.
      PINBOARD_FORWARD_TIMEOUT_MS: String(FORWARD_TIMEOUT_MS),
      PINBOARD_LOG_LEVEL: "warn",
      PINBOARD_METRICS: "false",
      PINBOARD_TRUSTED_PROXIES: "127.0.0.1",
    },
    undefined,
    join(topology.options.logDir, `pinboard${index}.log`),
  );
  await process.start(async () => (await fetch(`${url}/healthz`)).ok);
  return { index, url, process, ...(redisProxy ? { redisProxy } : {}) };
}

async function startChaosWorker(topology: Topology, id: string, credential: string): Promise<ChaosWorker> {
  const port = await freePort();
  const advertiseProxy = await startFaultProxy(`${id}-advertise`, "127.0.0.1", port);
  const storeProxy = await startFaultProxy(`${id}-store`, "127.0.0.1", topology.durable.port);
  const pinboard = topology.pinboards[Number(id.slice(1)) % topology.pinboards.length]!;
  const clockFile = join(topology.options.logDir, `${id}.clock.json`);
  const clockEnv = Object.fromEntries(
    ["CHAOS_CLOCK_OFFSET_MS", "CHAOS_CLOCK_RATE"].flatMap((name) => {
      const value = globalThis.process.env[name];
      return value === undefined ? [] : [[name, value]];
    }),
  );
  const process = new ManagedProcess(
    id,
    "scripts/chaos/chaos-worker.ts",
    {
      PINBOARD_URL: pinboard.url,
      CREDENTIAL: credential,
      CLIENT_ID: id,
      PORT: String(port),
      ADVERTISE_URL: `http://127.0.0.1:${advertiseProxy.port}`,
      DURABLE_REDIS_URL: `redis://127.0.0.1:${storeProxy.port}`,
      USER_DB_URL: topology.userDb.url,
      SERVED_LOG: topology.servedLog,
      USER_DB_LOG: topology.userDbLog,
      ...(topology.options.noFence ? { NO_FENCE: "1" } : {}),
      ...(topology.options.layers ? { CHAOS_LAYERS: topology.options.layers.join(",") } : {}),
      CHAOS_CLOCK_FILE: clockFile,
      ...clockEnv,
    },
    /^ready /m,
    join(topology.options.logDir, `${id}.log`),
  );
  await process.start();
  return { id, process, advertiseProxy, storeProxy, clockFile };
}

/** Stops the single placement Redis and starts it again, empty, on the same port. */
export async function restartRedisEmpty(topology: Topology): Promise<void> {
  if (topology.cluster) return topology.cluster.restart();
  const port = topology.single!.port;
  await topology.single!.stop();
  topology.single = await startEmbeddedRedis({ port });
}

export async function stopTopology(topology: Topology): Promise<void> {
  for (const worker of topology.workers) await worker.process.kill();
  for (const node of topology.pinboards) await node.process.kill();
  const proxies = [
    ...topology.pinboards.flatMap((n) => (n.redisProxy ? [n.redisProxy] : [])),
    ...topology.workers.flatMap((w) => [w.advertiseProxy, w.storeProxy]),
  ];
  await Promise.all(proxies.map((p) => p.close()));
  await Promise.all([
    topology.durable.stop(),
    topology.userDb.stop(),
    topology.single?.stop(),
    topology.cluster?.stop(),
  ]);
}
