/**
 * redis-floor: the physical floor of one resolve. The resolve script (EVALSHA, EVAL on NOSCRIPT)
 * run straight against Redis through the same client library and adapter as Pinboard's Node
 * entry (ioredis via TcpRedis), with `connections` calls in flight for
 * `duration` seconds. The keys and arguments are built exactly as src/placement/resolver.ts builds
 * them. Two uses: hot ids that already have a live placement (the floor of pinboard-hot), and a
 * fresh id per call with a client-address affinity hash (the Redis cost of one new placement,
 * as pinboard-new makes them, for the workers-count scaling check).
 */

import { affinityHash } from "../src/placement/affinity.ts";
import { resolveCall } from "../src/placement/lua/index.ts";
import { randomSeed } from "../src/placement/resolver.ts";
import type { Keys } from "../src/redis/keys.ts";
import { TcpRedis } from "../src/runtime/node/redis/tcp.ts";
import type { BenchArgs } from "./args.ts";
import { CpuWindow } from "./proc-stats.ts";
import { commandStats, resetRedisStats } from "./redis-stats.ts";
import { percentile, type ScenarioResult } from "./report.ts";
import { singleModeResolve } from "./single-mode-resolve.ts";
import { BALANCE_FACTOR, LEASE_MS, type Topology } from "./topology.ts";

export interface FloorOptions {
  name: string;
  redisUrl: string;
  keys: Keys;
  ns: string;
  /** Hot ids to cycle through, or a prefix for a new id per call. */
  ids: string[] | { freshPrefix: string };
  /** The affinity hash argument (uint32), as Pinboard passes for a client address; none when absent. */
  affinity?: number;
  leaseMs: number;
  balanceFactor: number;
  connections: number;
  durationS: number;
  redisPid: number;
  /** Runs after the warm-up, right before the measured window. */
  beforeMeasure?: () => Promise<void>;
}

export async function runRedisFloor(o: FloorOptions): Promise<ScenarioResult> {
  const redis = new TcpRedis({ url: o.redisUrl });
  try {
    const make = (id: string) =>
      resolveCall(
        o.keys,
        singleModeResolve(o.keys, o.ns, id, {
          leaseMs: o.leaseMs,
          balanceFactor: o.balanceFactor,
          seed: 1,
          affinity: o.affinity,
        }),
      );
    const hot = Array.isArray(o.ids) ? o.ids.map(make) : null;
    const freshPrefix = Array.isArray(o.ids) ? "" : o.ids.freshPrefix;
    let next = 0;
    let n = 0;
    let failures = 0;
    const latencies = new Float64Array(4_000_000);
    const statuses: Record<string, number> = {};

    const loop = async (until: number, record: boolean) => {
      while (performance.now() < until) {
        const call = hot ? hot[next++ % hot.length]! : make(`${freshPrefix}-${next++}`);
        const args = call.args.slice();
        args[args.length - 1] = randomSeed();
        const started = performance.now();
        let outcome: string;
        try {
          const reply = (await redis.run(call.script, call.keys, args)) as string[];
          outcome = reply[0] === "forward" ? "forward" : `${reply[0]}:${reply[1]}`;
        } catch (err) {
          outcome = `error:${err instanceof Error ? err.message : String(err)}`;
        }
        if (!record) continue;
        if (n < latencies.length) latencies[n++] = performance.now() - started;
        statuses[outcome] = (statuses[outcome] ?? 0) + 1;
        if (outcome !== "forward") failures++;
      }
    };

    // Warm-up: the script cache, ioredis' pipeline, the JIT.
    const warmUntil = performance.now() + 500;
    await Promise.all(Array.from({ length: o.connections }, () => loop(warmUntil, false)));

    await o.beforeMeasure?.();
    const cpu = new CpuWindow({ redis: o.redisPid });
    const started = performance.now();
    const until = started + o.durationS * 1000;
    await Promise.all(Array.from({ length: o.connections }, () => loop(until, true)));
    const seconds = (performance.now() - started) / 1000;
    const used = cpu.delta();

    const sorted = Float64Array.from(latencies.subarray(0, n)).sort();
    return {
      name: o.name,
      requests: n,
      rps: n / seconds,
      p50Ms: percentile(sorted, 0.5),
      p99Ms: percentile(sorted, 0.99),
      non2xx: failures,
      errors: 0,
      statuses,
      cpuPer10k: {
        proxy: null,
        redis: used.redis === undefined || n === 0 ? null : (used.redis / n) * 10_000,
        worker: null,
      },
      proxyRssMb: null,
      proxyPeakRssMb: null,
      seconds,
      note: `EVALSHA resolve from the bench process (ioredis via TcpRedis), ${o.connections} in flight, ${hot ? `${hot.length} hot ids` : "a new id per call"}; non-2xx counts replies other than "forward"`,
    };
  } finally {
    await redis.close();
  }
}

export interface FloorContext {
  top: Topology;
  args: BenchArgs;
  rows: ScenarioResult[];
  log: (msg: string) => void;
}

/**
 * The bench's floor rows: `floor(name, ns, ids)` runs the resolve script straight against Redis
 * with hot ids, or with a new id per call and the affinity hash Pinboard derives from the bench's
 * client address, and appends the row.
 */
export function floorRunner(
  c: FloorContext,
): (name: string, ns: string, ids: string[] | { freshPrefix: string }) => Promise<void> {
  const { top, args } = c;
  return async (name, ns, ids) => {
    c.log(`${name}: ${args.duration} s, ${args.connections} in flight`);
    const clientAffinity = await affinityHash("127.0.0.1");
    const common = {
      name,
      redisUrl: top.redis.url,
      keys: top.keys,
      ns,
      ids,
      leaseMs: LEASE_MS,
      balanceFactor: BALANCE_FACTOR,
      redisPid: top.redis.process.pid!,
    };
    const row = await runRedisFloor({
      ...common,
      ...(Array.isArray(ids) ? {} : { affinity: clientAffinity }),
      connections: args.connections,
      durationS: args.duration,
      beforeMeasure: () => resetRedisStats(top.admin),
    });
    row.redisUsecPerEvalsha = (await commandStats(top.admin)).evalsha?.usecPerCall ?? null;
    c.rows.push(row);
    c.log(
      `${name}: ${row.rps.toFixed(0)} resolves/s, p50 ${row.p50Ms?.toFixed(2)} ms, Redis CPU ${row.cpuPer10k.redis?.toFixed(2)} s/10k`,
    );
  };
}
