import { execFile } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { createServer } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Redis } from "ioredis";
import { type EmbeddedRedis, startEmbeddedRedis } from "../../src/runtime/node/dev-store/embedded-redis.ts";
import { freePort } from "../../src/runtime/node/process/free-port.ts";

/** One redis-server of a test cluster. */
export interface ClusterNode {
  port: number;
  /** "127.0.0.1:port", as CLUSTER NODES and REDIS_CLUSTER_NODES spell it. */
  address: string;
  server: EmbeddedRedis;
  /** False once kill() ended it. */
  alive: boolean;
}

export interface RedisCluster {
  /** The seed list for REDIS_CLUSTER_NODES: every node, "127.0.0.1:p1,127.0.0.1:p2,…". */
  nodes: string;
  all: ClusterNode[];
  /** One command on one node over a short-lived connection (admin, INFO, CLUSTER …). */
  command(port: number, ...args: string[]): Promise<unknown>;
  /** The live primaries right now, with the slot ranges each one serves (CLUSTER SLOTS). */
  primaries(): Promise<Array<{ node: ClusterNode; slots: Array<[number, number]> }>>;
  /** The node serving a key's hash slot now. */
  ownerOf(key: string): Promise<ClusterNode>;
  /** Waits until every live node says cluster_state:ok and every slot is served by a live primary. */
  waitUntilOk(timeoutMs?: number): Promise<void>;
  /** SIGKILL one node, at once (no shutdown, no save). */
  kill(port: number): Promise<void>;
  /**
   * Stops every node and starts it again, empty, on its port with its nodes.conf: the cluster
   * equivalent of a redis-server restarted empty. Waits until the cluster is ok again.
   */
  restart(): Promise<void>;
  /** FLUSHALL on every live primary. */
  flushAll(): Promise<void>;
  /** KEYS on every live primary, concatenated (a cluster's KEYS only sees one node's slots). */
  keys(pattern?: string): Promise<string[]>;
  /** errorstat_* of INFO errorstats summed over the live nodes, e.g. { NOSCRIPT: 12 }. */
  errorStats(): Promise<Record<string, number>>;
  /** Stops every node and removes the config directory. */
  stop(): Promise<void>;
}

export interface RedisClusterOptions {
  primaries: number;
  /** Replicas per primary: 1 for failover tests. */
  replicas?: 0 | 1;
  /** cluster-node-timeout: how long a silent primary goes before it is failed over (ms); 5000. */
  nodeTimeoutMs?: number;
}

const HOST = "127.0.0.1";
const SLOTS = 16384;

/** True when nothing listens on the port (a bind succeeds). */
function portIsFree(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const server = createServer();
    server.unref();
    server.once("error", () => resolve(false));
    server.listen(port, HOST, () => server.close(() => resolve(true)));
  });
}

/** A free port whose cluster bus port (port + 10000) is free too. */
async function clusterPort(taken: Set<number>): Promise<number> {
  for (let attempt = 0; attempt < 200; attempt++) {
    const port = await freePort();
    const bus = port + 10_000;
    if (bus > 65_535 || taken.has(port) || taken.has(bus)) continue;
    if (await portIsFree(bus)) return port;
  }
  throw new Error("no free port pair (port, port + 10000) for a cluster node");
}

/**
 * The node itself, not another test file's that took the port between the check and the bind
 * (its redis-server then exits, and the readiness probe reaches the other one): INFO's process_id
 * must be this server's pid.
 */
async function ownNode(server: EmbeddedRedis): Promise<EmbeddedRedis> {
  const info = String(await command(server.port, "INFO", "server"));
  if (/process_id:(\d+)/.exec(info)?.[1] === String(server.process.pid)) return server;
  server.process.kill("SIGKILL");
  throw new Error(`port ${server.port} answered from another redis-server`);
}

function run(binary: string, args: string[], timeoutMs: number): Promise<string> {
  return new Promise((resolve, reject) => {
    execFile(binary, args, { timeout: timeoutMs }, (err, stdout, stderr) => {
      if (err) reject(new Error(`${binary} ${args.join(" ")} failed: ${err.message}\n${stdout}\n${stderr}`));
      else resolve(stdout);
    });
  });
}

async function command(port: number, ...args: string[]): Promise<unknown> {
  const client = new Redis({
    host: HOST,
    port,
    lazyConnect: true,
    maxRetriesPerRequest: 0,
    retryStrategy: () => null,
    connectTimeout: 1000,
  });
  client.on("error", () => {});
  try {
    await client.connect();
    return await client.call(args[0]!, ...args.slice(1));
  } finally {
    client.disconnect();
  }
}

/** An INFO or CLUSTER INFO reply as field → value. */
export function parseInfo(text: string): Record<string, string> {
  const out: Record<string, string> = {};
  for (const line of text.split(/\r?\n/)) {
    const colon = line.indexOf(":");
    if (colon > 0 && !line.startsWith("#")) out[line.slice(0, colon)] = line.slice(colon + 1);
  }
  return out;
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/**
 * A real Redis Cluster on loopback for one test file: `primaries` (× (1 + replicas)) redis-servers
 * with --cluster-enabled, joined by `redis-cli --cluster create`, ready when every node says
 * cluster_state:ok (and, with replicas, every replica's link to its primary is up). Every process
 * is killed when the test process exits, however it exits.
 */
export async function startRedisCluster(options: RedisClusterOptions): Promise<RedisCluster> {
  const replicas = options.replicas ?? 0;
  const count = options.primaries * (1 + replicas);
  const dir = mkdtempSync(join(tmpdir(), "pinboard-cluster-"));
  const all: ClusterNode[] = [];
  const cleanup = () => {
    for (const node of all) node.server.process.kill("SIGKILL");
    rmSync(dir, { recursive: true, force: true });
  };
  process.once("exit", cleanup);

  const startNode = (port: number) =>
    startEmbeddedRedis({
      port,
      args: [
        "--cluster-enabled",
        "yes",
        "--cluster-config-file",
        join(dir, `nodes-${port}.conf`),
        "--dir",
        dir,
        "--cluster-node-timeout",
        String(options.nodeTimeoutMs ?? 5000),
        // A replica may always take over, however long its link was down.
        "--cluster-replica-validity-factor",
        "0",
      ],
    });

  const taken = new Set<number>();
  try {
    for (let i = 0; i < count; i++) {
      let server: EmbeddedRedis | undefined;
      for (let attempt = 0; !server; attempt++) {
        const port = await clusterPort(taken);
        try {
          server = await ownNode(await startNode(port));
        } catch (err) {
          if (attempt >= 3) throw err; // a port taken between the check and the bind: try another
        }
      }
      taken.add(server.port).add(server.port + 10_000);
      all.push({ port: server.port, address: `${HOST}:${server.port}`, server, alive: true });
    }
    await run(
      "redis-cli",
      ["--cluster", "create", ...all.map((n) => n.address), "--cluster-replicas", String(replicas), "--cluster-yes"],
      60_000,
    );
  } catch (err) {
    cleanup();
    process.off("exit", cleanup);
    throw err;
  }

  const byPort = (port: number) => {
    const node = all.find((n) => n.port === port);
    if (!node) throw new Error(`no cluster node on port ${port}`);
    return node;
  };
  const live = () => all.filter((n) => n.alive);

  const slotsOf = async (): Promise<Array<{ node: ClusterNode; slots: Array<[number, number]> }>> => {
    for (const node of live()) {
      let reply: unknown;
      try {
        reply = await command(node.port, "CLUSTER", "SLOTS");
      } catch {
        continue;
      }
      const owners = new Map<number, Array<[number, number]>>();
      for (const [from, to, master] of reply as Array<[number, number, [string, number]]>) {
        const port = Number(master[1]);
        owners.set(port, [...(owners.get(port) ?? []), [Number(from), Number(to)]]);
      }
      return [...owners].map(([port, slots]) => ({ node: byPort(port), slots }));
    }
    throw new Error("no live cluster node answered CLUSTER SLOTS");
  };

  const cluster: RedisCluster = {
    nodes: all.map((n) => n.address).join(","),
    all,
    command,
    primaries: async () => (await slotsOf()).filter((p) => p.node.alive),
    async ownerOf(key) {
      const slot = Number(await command(live()[0]!.port, "CLUSTER", "KEYSLOT", key));
      const owner = (await slotsOf()).find((p) => p.slots.some(([from, to]) => slot >= from && slot <= to));
      if (!owner) throw new Error(`no node serves slot ${slot}`);
      return owner.node;
    },
    async waitUntilOk(timeoutMs = 30_000) {
      const deadline = Date.now() + timeoutMs;
      let last = "";
      for (;;) {
        try {
          const states = await Promise.all(
            live().map(async (n) => parseInfo(String(await command(n.port, "CLUSTER", "INFO")))),
          );
          const owners = await slotsOf();
          const served = owners
            .filter((o) => o.node.alive)
            .reduce((sum, o) => sum + o.slots.reduce((s, [a, b]) => s + b - a + 1, 0), 0);
          const replicationUp = await Promise.all(
            live().map(async (n) => {
              const info = parseInfo(String(await command(n.port, "INFO", "replication")));
              return info.role === "master" || info.master_link_status === "up";
            }),
          );
          last = `states ${states.map((s) => s.cluster_state).join(",")}, ${served} slots on live primaries, replication ${replicationUp.join(",")}`;
          if (states.every((s) => s.cluster_state === "ok") && served === SLOTS && replicationUp.every(Boolean)) return;
        } catch (err) {
          last = String(err);
        }
        if (Date.now() > deadline) throw new Error(`redis cluster not ok after ${timeoutMs} ms: ${last}`);
        await sleep(100);
      }
    },
    async kill(port) {
      const node = byPort(port);
      node.alive = false;
      const child = node.server.process;
      if (child.exitCode !== null || child.signalCode !== null) return;
      await new Promise<void>((resolve) => {
        child.once("exit", () => resolve());
        child.kill("SIGKILL");
      });
    },
    async restart() {
      await Promise.all(all.map((n) => n.server.stop()));
      for (const node of all) {
        node.server = await startNode(node.port);
        node.alive = true;
      }
      await cluster.waitUntilOk();
    },
    async flushAll() {
      await Promise.all((await cluster.primaries()).map((p) => command(p.node.port, "FLUSHALL")));
    },
    async keys(pattern = "*") {
      const lists = await Promise.all((await cluster.primaries()).map((p) => command(p.node.port, "KEYS", pattern)));
      return (lists as string[][]).flat();
    },
    async errorStats() {
      const out: Record<string, number> = {};
      for (const node of live()) {
        const info = parseInfo(String(await command(node.port, "INFO", "errorstats")));
        for (const [name, value] of Object.entries(info)) {
          const kind = name.replace(/^errorstat_/, "");
          out[kind] = (out[kind] ?? 0) + Number(/count=(\d+)/.exec(value)?.[1] ?? 0);
        }
      }
      return out;
    },
    async stop() {
      await Promise.all(all.map((n) => n.server.stop()));
      for (const n of all) n.alive = false;
      rmSync(dir, { recursive: true, force: true });
      process.off("exit", cleanup);
    },
  };
  await cluster.waitUntilOk();
  return cluster;
}
