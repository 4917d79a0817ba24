import type { Socket } from "node:net";
import type { TestRedis } from "./redis.ts";
import type { RedisCluster } from "./redis-cluster.ts";
import { startTcpProxy } from "./tcp-proxy.ts";

export interface LatencyProxy {
  port: number;
  url: string;
  /** Added one-way delay for every chunk, in ms (both directions). */
  delayMs: number;
  close(): Promise<void>;
}

/** A TCP proxy on loopback that delays every chunk both ways: a slow Redis without touching Redis. */
export async function startLatencyProxy(targetPort: number, delayMs = 0): Promise<LatencyProxy> {
  const state = { delayMs };
  // Each direction is a FIFO: a chunk leaves at its own due time or after the chunk before it,
  // whichever is later, so lowering delayMs while bytes are in flight never reorders them.
  const pipe = (from: Socket, to: Socket) => {
    const queue: Array<{ chunk: Buffer; due: number }> = [];
    let timer: NodeJS.Timeout | undefined;
    const flush = () => {
      timer = undefined;
      while (queue.length > 0 && queue[0]!.due <= Date.now()) {
        const { chunk } = queue.shift()!;
        if (to.writable) to.write(chunk);
      }
      if (queue.length > 0) timer = setTimeout(flush, Math.max(0, queue[0]!.due - Date.now()));
    };
    from.on("data", (chunk: Buffer) => {
      const due = Math.max(Date.now() + state.delayMs, queue.at(-1)?.due ?? 0);
      queue.push({ chunk, due });
      if (timer === undefined) {
        if (queue.length === 1 && due <= Date.now()) flush();
        else timer = setTimeout(flush, Math.max(0, queue[0]!.due - Date.now()));
      }
    });
  };
  const proxy = await startTcpProxy(targetPort, (client, upstream) => {
    pipe(client, upstream);
    pipe(upstream, client);
  });
  // The handle is the state itself: setting its `delayMs` is what the piping reads.
  return Object.assign(state, { port: proxy.port, url: `redis://127.0.0.1:${proxy.port}`, close: proxy.close });
}

export interface ClusterLatencyProxy {
  /** Seed nodes for REDIS_CLUSTER_NODES: the proxies' addresses. */
  nodes: string;
  /** Added one-way delay on every node's proxy, in ms. */
  delayMs: number;
  /** Closes the proxies; the nodes announce their own ports again. */
  close(): Promise<void>;
}

/**
 * A latency proxy in front of every node of a cluster, each node announcing its proxy's port
 * (cluster-announce-port): the slot map and every MOVED then name proxies, so a client seeded
 * with `nodes` reaches Redis only through them.
 */
export async function startClusterLatencyProxy(cluster: RedisCluster): Promise<ClusterLatencyProxy> {
  const proxies = await Promise.all(cluster.all.map((node) => startLatencyProxy(node.port)));
  const announce = (port: (i: number) => number) =>
    Promise.all(
      cluster.all.map((node, i) =>
        cluster.command(node.port, "CONFIG", "SET", "cluster-announce-port", String(port(i))),
      ),
    );
  await announce((i) => proxies[i]!.port);
  // Every node must know every other node's new port before a client reads the slot map.
  const wanted = new Set(proxies.map((p) => p.port));
  const deadline = Date.now() + 15_000;
  for (;;) {
    const maps = await Promise.all(cluster.all.map((node) => cluster.command(node.port, "CLUSTER", "SLOTS")));
    const ports = (maps as Array<Array<[number, number, [string, number]]>>).flat().map((range) => Number(range[2][1]));
    if (ports.every((p) => wanted.has(p))) break;
    if (Date.now() > deadline) throw new Error(`cluster nodes still announce ${ports.join(",")}`);
    await new Promise((r) => setTimeout(r, 100));
  }
  return {
    nodes: proxies.map((p) => `127.0.0.1:${p.port}`).join(","),
    get delayMs() {
      return proxies[0]!.delayMs;
    },
    set delayMs(ms: number) {
      for (const p of proxies) p.delayMs = ms;
    },
    async close() {
      await announce(() => 0);
      await Promise.all(proxies.map((p) => p.close()));
    },
  };
}

/**
 * A latency proxy in front of `t` (one per node when it is a cluster), and the Redis target that
 * reaches `t` through it, for startPinboardProcess's `redis` or startTestPinboard.
 */
export async function startLatencyProxyFor(
  t: TestRedis,
): Promise<{ proxy: LatencyProxy | ClusterLatencyProxy; target: { url: string } | { clusterNodes: string } }> {
  if (t.cluster) {
    const proxies = await startClusterLatencyProxy(t.cluster);
    return { proxy: proxies, target: { clusterNodes: proxies.nodes } };
  }
  const single = await startLatencyProxy(t.server.port);
  return { proxy: single, target: { url: single.url } };
}
