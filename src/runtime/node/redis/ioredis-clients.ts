import { Cluster, Redis, type RedisOptions } from "ioredis";
import type { CommandBound } from "./ioredis-port.ts";

/**
 * The ioredis clients of the Node entry, set up so that no command is ever sent twice: a script
 * written to a connection that then dies may have run, so it fails (503, the caller retries)
 * rather than being sent again. What ioredis would otherwise re-send, and the option that stops it:
 *
 * - One server: on reconnect, the commands that were in flight on the lost connection
 *   (`autoResendUnfulfilledCommands`, off here). `maxRetriesPerRequest: 0` rejects them as the
 *   connection closes (without it they would wait, unsent, for their timeout).
 * - A cluster: a command whose node connection closed ("Connection is closed.") is sent again,
 *   after `retryDelayOnFailover`, to whichever node serves its slot by then, a promoted replica
 *   included (off here: 0). Redirections (MOVED, ASK) and TRYAGAIN / CLUSTERDOWN replies are still
 *   followed and retried: Redis refused those commands without running them.
 *
 * The offline queue stays on in both: a command sent while no connection is up waits there
 * unsent, is written once the connection is back, and fails when the next attempt fails
 * (`maxRetriesPerRequest: 0` flushes it at every failed attempt) or at its timeout.
 * test/runtime/node/redis/no-resend.test.ts and test/redis/cluster-no-resend.test.ts prove it.
 */

/** One Redis server (REDIS_URL): user, password and /<db> from the URL, rediss:// over TLS. */
export function serverClient(url: string, timeoutMs: number): Redis {
  return new Redis(url, {
    ...commonOptions(timeoutMs),
    autoResendUnfulfilledCommands: false,
    maxRetriesPerRequest: 0,
    // A server that leaves written commands unanswered this long (stopped, or cut off without a
    // reset) is taken for gone: the connection is dropped and made again.
    socketTimeout: 2 * timeoutMs,
    enableAutoPipelining: false,
  });
}

/** A Redis Cluster (REDIS_CLUSTER_NODES) from its seed nodes, "host:port" each. */
export function clusterClient(nodes: string[], timeoutMs: number): Cluster {
  return new Cluster(
    nodes.map((node) => {
      const [host, port] = node.split(":");
      return { host: host ?? "127.0.0.1", port: Number(port) };
    }),
    {
      // No auto-pipelining on a cluster: ioredis batches the commands of several slots of one
      // node into one pipeline, and retries a redirected pipeline only when every command got
      // the same error and none was a write that succeeded. During a failover (MOVED to the
      // dead primary, for several slots) or a resharding, the raw MOVED reply would reach the
      // caller as a 500. Sent one by one, each command follows its own redirections, retries
      // (retryDelayOnClusterDown, retryDelayOnTryAgain) and fails after maxRedirections as
      // "too many redirections", which RedisOutageGuard answers with 503.
      enableAutoPipelining: false,
      retryDelayOnFailover: 0,
      // A node's connection is never made again (ioredis' cluster default), so these two only
      // matter if that changes: fail what was in flight, re-send nothing.
      redisOptions: { ...commonOptions(timeoutMs), autoResendUnfulfilledCommands: false, maxRetriesPerRequest: 0 },
      slotsRefreshTimeout: 2000,
    },
  );
}

function commonOptions(timeoutMs: number): RedisOptions {
  return {
    // RESP2, as Upstash speaks it and the scripts assume: Lua false is nil, numbers are integers.
    protocol: 2,
    commandTimeout: timeoutMs,
    keepAlive: 15_000,
    // CLIENT SETINFO is Redis 7.2's; older servers refuse it on every connection.
    disableClientInfo: true,
    lazyConnect: false,
  };
}

/**
 * A Cluster holds commands in its offline queue while no node answers, where the per-node
 * commandTimeout does not reach them: every cluster command gets the same deadline, so a cluster
 * that is down is a bounded failure (503) rather than a hang. Like any timeout, the command
 * may still run (once) after its caller was told it failed.
 */
export function clusterDeadline(timeoutMs: number): CommandBound {
  return <T>(command: () => Promise<T>): Promise<T> => {
    let timer: ReturnType<typeof setTimeout> | undefined;
    const deadline = new Promise<never>((_, reject) => {
      timer = setTimeout(() => reject(new Error(`Redis Cluster did not answer within ${timeoutMs} ms`)), timeoutMs);
    });
    return Promise.race([command(), deadline]).finally(() => clearTimeout(timer));
  };
}
