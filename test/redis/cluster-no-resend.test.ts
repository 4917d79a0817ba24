import { createHash } from "node:crypto";
import { Redis } from "ioredis";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { LuaScript } from "../../src/contract/lua-script.ts";
import { TcpRedis } from "../../src/runtime/node/redis/tcp.ts";
import { until } from "../support/local-worker.ts";
import { type ClusterNode, parseInfo, type RedisCluster, startRedisCluster } from "../support/redis-cluster.ts";
import { startClusterReplyHoldingProxies } from "./reply-holding-proxy.ts";

/**
 * A Redis Cluster never gets a command twice from Pinboard, across a failover too. A script that
 * increments a counter runs on its slot's primary and reaches the primary's replica, while its
 * reply is held back on the way to Pinboard; the primary is killed, the replica promoted, and
 * only then does Pinboard's connection to the dead primary close. ioredis' default would send the
 * script again to the new primary ("Connection is closed." is retried after
 * retryDelayOnFailover), and the caller would get 2 for a counter it incremented once. Here the
 * caller gets an error and the counter stays at 1.
 */

const body = "return redis.call('INCR', KEYS[1])";
const incr: LuaScript = { name: "test-incr", script: body, sha: createHash("sha1").update(body).digest("hex") };
const KEY = "{no-resend}:counter";

let cluster: RedisCluster;
let proxies: Awaited<ReturnType<typeof startClusterReplyHoldingProxies>>;
let redis: TcpRedis;
/** The counter's slot's primary and its replica (read before the nodes announce their proxies). */
let primary: ClusterNode;
let replicaPort: number;

beforeAll(async () => {
  cluster = await startRedisCluster({ primaries: 3, replicas: 1, nodeTimeoutMs: 2000 });
  primary = await cluster.ownerOf(KEY);
  const info = parseInfo(String(await cluster.command(primary.port, "INFO", "replication")));
  replicaPort = Number(/port=(\d+)/.exec(info.slave0 ?? "")?.[1]);
  proxies = await startClusterReplyHoldingProxies(cluster);
  // A timeout far past the failover: what fails the call must be the lost connection, not a timer.
  redis = new TcpRedis({ clusterNodes: proxies.nodes.split(","), commandTimeoutMs: 30_000 });
});
afterAll(async () => {
  await redis?.close();
  await proxies?.close();
  await cluster?.stop();
});

/** The counter as the replica at `port` holds it. */
async function replicaCounter(port: number): Promise<string | null> {
  const replica = new Redis({ port, lazyConnect: true, maxRetriesPerRequest: 0 });
  try {
    await replica.connect();
    await replica.readonly();
    return await replica.get(KEY);
  } finally {
    replica.disconnect();
  }
}

/** True once the node at `port` is a primary and its cluster is ok (every slot served). */
async function promoted(port: number): Promise<boolean> {
  const role = parseInfo(String(await cluster.command(port, "INFO", "replication"))).role;
  const state = parseInfo(String(await cluster.command(port, "CLUSTER", "INFO"))).cluster_state;
  return role === "master" && state === "ok";
}

describe("a Redis Cluster: no command is sent twice", () => {
  it("a script in flight when its primary dies and its replica takes over fails, and runs once", async () => {
    expect(replicaPort, `a replica of ${primary.address}`).toBeGreaterThan(0);
    expect(await redis.run(incr, ["{no-resend}:warm"], [])).toBe(1);
    const toPrimary = proxies.byNodePort.get(primary.port)!;

    toPrimary.holdReplies = true;
    const call = redis.run(incr, [KEY], []).then(
      (reply) => ({ reply }),
      (err: Error) => ({ error: err.message }),
    );
    // The script ran on the primary and its effect reached the replica; the reply waits in the proxy.
    await until(async () => ((await replicaCounter(replicaPort)) === "1" ? true : null), 10_000, 20);

    await cluster.kill(primary.port);
    await until(async () => ((await promoted(replicaPort)) ? true : null), 30_000, 100);
    // Only now does Pinboard hear that the connection its script was written on is gone.
    toPrimary.holdReplies = false;
    toPrimary.cut();

    const outcome = await call;
    expect(outcome).toHaveProperty("error");
    // The new primary serves the slot; give a re-send every chance to land before counting.
    await until(
      async () => ((await redis.get("{no-resend}:probe").catch(() => "down")) === null ? true : null),
      15_000,
    );
    await new Promise((r) => setTimeout(r, 500));
    expect(await redis.get(KEY)).toBe("1");
  }, 90_000);
});
