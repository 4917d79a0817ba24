import { type AddressInfo, createConnection, createServer, type Socket } from "node:net";
import type { RedisCluster } from "../support/redis-cluster.ts";

/**
 * A TCP proxy in front of one redis-server that can hold Redis' replies back and cut its
 * connections while it keeps listening: the way to have a command run on the server while its
 * client never hears the answer, and then lose the connection it was written on.
 */
export interface ReplyHoldingProxy {
  port: number;
  url: string;
  /**
   * While true, what Redis writes back is kept from the client (commands still reach Redis).
   * Replication links are never held: a cluster replica reaches its primary through the
   * primary's announced port, its proxy.
   */
  holdReplies: boolean;
  /** Connections the proxy has accepted so far. */
  readonly accepted: number;
  /** Ends every connection through the proxy at once (held replies are dropped); new ones are welcome. */
  cut(): void;
  close(): Promise<void>;
}

export async function startReplyHoldingProxy(targetPort: number): Promise<ReplyHoldingProxy> {
  const pairs = new Set<[Socket, Socket]>();
  let accepted = 0;
  const state = { holdReplies: false };
  const server = createServer((client) => {
    accepted++;
    const upstream = createConnection({ port: targetPort, host: "127.0.0.1" });
    const pair: [Socket, Socket] = [client, upstream];
    let replication = false;
    pairs.add(pair);
    const end = () => {
      pairs.delete(pair);
      client.destroy();
      upstream.destroy();
    };
    client.on("error", end);
    client.on("close", end);
    // A server that goes away while replies are held leaves its client waiting (a dead primary
    // the client has not noticed yet) until cut() says so.
    upstream.on("error", () => (!state.holdReplies || replication) && end());
    upstream.on("close", () => (!state.holdReplies || replication) && end());
    client.on("data", (chunk: Buffer) => {
      replication ||= /REPLCONF|PSYNC/i.test(chunk.toString("latin1"));
      if (upstream.writable) upstream.write(chunk);
    });
    upstream.on("data", (chunk: Buffer) => (!state.holdReplies || replication) && client.write(chunk));
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as AddressInfo;
  const cut = () => {
    for (const [client, upstream] of pairs) {
      client.destroy();
      upstream.destroy();
    }
    pairs.clear();
  };
  return {
    port,
    url: `redis://127.0.0.1:${port}`,
    get holdReplies() {
      return state.holdReplies;
    },
    set holdReplies(hold: boolean) {
      state.holdReplies = hold;
    },
    get accepted() {
      return accepted;
    },
    cut,
    close: () =>
      new Promise<void>((resolve) => {
        cut();
        server.close(() => resolve());
      }),
  };
}

/**
 * One reply-holding proxy per node of a cluster, each node announcing its proxy's port
 * (cluster-announce-port): the slot map and every MOVED name proxies, so a client seeded with
 * `nodes` reaches every node, a promoted replica included, only through them.
 */
export async function startClusterReplyHoldingProxies(
  cluster: RedisCluster,
): Promise<{ nodes: string; byNodePort: Map<number, ReplyHoldingProxy>; close(): Promise<void> }> {
  const proxies = await Promise.all(cluster.all.map((node) => startReplyHoldingProxy(node.port)));
  await Promise.all(
    cluster.all.map((node, i) =>
      cluster.command(node.port, "CONFIG", "SET", "cluster-announce-port", String(proxies[i]!.port)),
    ),
  );
  const wanted = new Set(proxies.map((p) => p.port));
  const deadline = Date.now() + 15_000;
  for (;;) {
    const maps = await Promise.all(cluster.all.map((node) => cluster.command(node.port, "CLUSTER", "SLOTS")));
    const ports = (maps as Array<Array<[number, number, ...Array<[string, number]>]>>)
      .flat()
      .flatMap(([, , ...nodes]) => nodes.map((n) => Number(n[1])));
    if (ports.every((p) => wanted.has(p))) break;
    if (Date.now() > deadline) throw new Error(`cluster nodes still announce ${ports.join(",")}`);
    await new Promise((r) => setTimeout(r, 100));
  }
  return {
    nodes: proxies.map((p) => `127.0.0.1:${p.port}`).join(","),
    byNodePort: new Map(cluster.all.map((node, i) => [node.port, proxies[i]!])),
    close: async () => {
      await Promise.all(proxies.map((p) => p.close()));
    },
  };
}
