import type { ClusterNode } from "../../test/support/redis-cluster.ts";
import { killOnBurst, type ReadKey } from "./burst-kill.ts";
import { EdgeFaults } from "./edge-faults.ts";
import type { Fault, Operation } from "./history.ts";
import { injectOperatorFault } from "./operator-faults.ts";
import { choosePair, workerScoped } from "./overlap.ts";
import { type ChaosWorker, restartRedisEmpty, type Topology } from "./topology.ts";

/**
 * The nemesis: one fault at a time (or, for "overlap", two compatible ones held at once, each
 * recorded with its own times), chosen at random among those the topology allows, held for a
 * while, healed, then a quiet gap. Faults that take an owner away (kill -9, a SIGSTOP longer than
 * the lease, or to the edge of the worker's lease view) record the keys that worker served last,
 * whose recovery the checker measures. The faults aimed at edges live in edge-faults.ts.
 */

export type FaultKind = Fault["kind"];
/** What the nemesis chooses from: a fault kind, or "overlap": two compatible ones at once (overlap.ts). */
export type NemesisChoice = FaultKind | "overlap";

export interface NemesisOptions {
  kinds: NemesisChoice[];
  random: () => number;
  /** Quiet time between two faults (ms): [min, max). */
  gapMs: [number, number];
  /** Recent operations, to tell which keys a worker owns. */
  operations: () => readonly Operation[];
  /** Every key the workload uses ("/ns/id"): what an operator's wind-down picks from. */
  keys?: string[];
  /** Faults injected first, in this order, before the random draws (the CI profile's opening). */
  opening?: FaultKind[];
  /** A recorded read of one key: given, a kill -9 lands on a burst of the worker's answers (burst-kill.ts). */
  read?: ReadKey;
}

const PROXY_MODES = ["drop", "delay", "blackhole", "reset"] as const;

export class Nemesis {
  readonly faults: Fault[] = [];
  /** Why the nemesis stopped early (a fault it could not inject or heal), if it did. */
  failure: string | undefined;
  private stopping = false;
  private readonly opening: NemesisChoice[];
  private failovers = 0;
  private overlaps = 0;
  private readonly edges: EdgeFaults;

  constructor(
    private readonly topology: Topology,
    private readonly options: NemesisOptions,
  ) {
    this.edges = new EdgeFaults(topology, options.random, (worker) => this.keysOf(worker));
    this.opening = [...(options.opening ?? [])];
  }

  /**
   * Injects faults until `deadline`; each is healed before the next starts. The last one starts
   * early enough for the workload to see its keys served again: it may last a lease + 3 s (a
   * pause) and recovery may take a lease + 2 s.
   */
  async run(deadline: number): Promise<void> {
    const lastStart = deadline - (2 * this.topology.options.leaseTtlMs + 5000);
    while (!this.stopping && Date.now() < lastStart) {
      await sleep(this.between(...this.options.gapMs));
      if (this.stopping || Date.now() >= lastStart) break;
      const choice = this.opening.shift() ?? this.pick(this.options.kinds);
      // An overlap's second fault starts up to 1.5 s late: it needs that much more room.
      const pair = choice === "overlap" && Date.now() < lastStart - 1500 ? this.choosePair() : undefined;
      const kind = choice === "overlap" ? this.pick(this.options.kinds.filter((k) => k !== "overlap")) : choice;
      if ((pair ?? [kind]).includes("cluster-failover") && this.failovers >= 2) continue; // one replica per primary
      if (kind === undefined) continue;
      try {
        if (pair) this.faults.push(...(await this.injectPair(pair)));
        else this.faults.push(await this.inject(kind));
      } catch (err) {
        // The run goes on without faults: its history is still checked and reported.
        this.failure = `${pair ? pair.join(" + ") : kind}: ${err instanceof Error ? err.message : String(err)}`;
        return;
      }
    }
  }

  stop(): void {
    this.stopping = true;
  }

  private choosePair(): [FaultKind, FaultKind] | undefined {
    const kinds = this.options.kinds.filter((k): k is FaultKind => k !== "overlap");
    return choosePair(kinds, this.options.random);
  }

  /** Two faults held at once, the second started 0–1.5 s after the first, on one worker if both hit one. */
  private async injectPair([a, b]: [FaultKind, FaultKind]): Promise<Fault[]> {
    const overlap = ++this.overlaps;
    const worker = workerScoped(a) || workerScoped(b) ? this.pick(this.topology.workers) : undefined;
    const first = this.inject(a, worker);
    first.catch(() => undefined); // awaited below; not an unhandled rejection meanwhile
    await sleep(this.between(0, 1500));
    const faults = await Promise.all([first, this.inject(b, worker)]);
    return faults.map((fault) => ({ ...fault, overlap }));
  }

  /** One fault; a worker's fault hits `target` when given (an overlapping pair), else one at random. */
  private async inject(kind: FaultKind, target?: ChaosWorker): Promise<Fault> {
    const lease = this.topology.options.leaseTtlMs;
    const start = Date.now();
    const fault = (target: string, extra: Partial<Fault> = {}): Fault => ({
      kind,
      target,
      start,
      healed: Date.now(),
      ...extra,
    });
    switch (kind) {
      case "kill-worker": {
        const worker = target ?? this.busiest();
        const keys = this.keysOf(worker.id);
        if (this.options.read) await killOnBurst(worker, keys, this.options.read);
        else await worker.process.kill();
        await sleep(this.between(1000, 3000));
        await worker.process.start();
        return fault(worker.id, { keys });
      }
      case "pause-worker": {
        const worker = target ?? this.pick(this.topology.workers);
        const keys = this.keysOf(worker.id);
        worker.process.pause();
        await sleep(lease + this.between(1000, 3000)); // past its lease: a zombie when it wakes
        worker.process.resume();
        return fault(worker.id, { keys });
      }
      case "proxy-pinboard-redis":
      case "proxy-pinboard-worker":
      case "proxy-worker-store":
        return this.proxyFault(kind, start, target);
      case "pause-worker-edge":
        return this.edges.pauseAtLeaseEdge(target ?? this.pick(this.topology.workers));
      case "clock-skew":
      case "clock-rate":
      case "clock-rate-past-margin":
        return this.edges.clockFault(kind, target ?? this.pick(this.topology.workers));
      case "proxy-heal-inflight": {
        const worker = target ?? this.pick(this.topology.workers);
        return this.edges.healInFlight(this.pick([worker.advertiseProxy, worker.storeProxy]));
      }
      case "redis-restart-empty":
        await restartRedisEmpty(this.topology);
        this.failovers = 0; // every node is back, as a primary or a replica
        return fault("redis");
      case "cluster-failover":
        return this.clusterFailover(fault);
      case "kill-pinboard": {
        const node = this.pick(this.topology.pinboards);
        await node.process.kill();
        await sleep(this.between(1000, 4000));
        await node.process.start(async () => (await fetch(`${node.url}/healthz`)).ok);
        return fault(`pinboard${node.index}`);
      }
      case "drain-worker":
      case "wind-down-keys":
      case "wind-down-namespace":
        return injectOperatorFault(kind, {
          topology: this.topology,
          random: this.options.random,
          keys: this.options.keys ?? [],
        });
    }
  }

  /**
   * SIGKILL of a primary that has a live replica, then the wait for the replica's promotion. A
   * cluster that has not converged after a minute (seen once on a loaded two-core machine) is
   * restarted, so the campaign goes on; the fault says so.
   */
  private async clusterFailover(fault: (target: string, extra?: Partial<Fault>) => Fault): Promise<Fault> {
    const cluster = this.topology.cluster!;
    const candidates: ClusterNode[] = [];
    for (const { node } of await cluster.primaries()) {
      const info = String(await cluster.command(node.port, "INFO", "replication"));
      if (/connected_slaves:[1-9]/.test(info)) candidates.push(node);
    }
    if (candidates.length === 0) return fault("none", { mode: "no primary with a replica" });
    const primary = this.pick(candidates);
    this.failovers++;
    await cluster.kill(primary.port);
    try {
      await cluster.waitUntilOk(60_000);
      return fault(primary.address);
    } catch (err) {
      console.error(`chaos: ${err instanceof Error ? err.message : String(err)}; restarting the cluster`);
      for (const node of cluster.all.filter((n) => n.alive)) {
        const info = String(await cluster.command(node.port, "CLUSTER", "INFO").catch((e) => e));
        if (!info.includes("cluster_state:ok"))
          console.error(
            `chaos: ${node.address} CLUSTER NODES:\n${await cluster.command(node.port, "CLUSTER", "NODES")}`,
          );
      }
      await cluster.restart();
      this.failovers = 0;
      return fault(primary.address, { mode: "not converged in 60 s: cluster restarted empty" });
    }
  }

  private async proxyFault(kind: FaultKind, start: number, target?: ChaosWorker): Promise<Fault> {
    const workers = target ? [target] : this.topology.workers;
    const proxies =
      kind === "proxy-pinboard-redis"
        ? this.topology.pinboards.flatMap((n) => (n.redisProxy ? [n.redisProxy] : []))
        : kind === "proxy-pinboard-worker"
          ? workers.map((w) => w.advertiseProxy)
          : workers.map((w) => w.storeProxy);
    const proxy = this.pick(proxies);
    const mode = this.pick(PROXY_MODES);
    proxy.setMode(mode, mode === "delay" ? this.between(200, 1500) : undefined);
    await sleep(this.between(2000, 6000));
    proxy.setMode("pass");
    return { kind, target: proxy.name, mode, start, healed: Date.now() };
  }

  /** The keys whose last answered operation came from `worker`: the instances it holds. */
  private keysOf(worker: string): string[] {
    const last = new Map<string, string | undefined>();
    for (const op of this.options.operations()) if (op.outcome === "ok") last.set(op.key, op.worker);
    return [...last].filter(([, w]) => w === worker).map(([key]) => key);
  }

  /** The worker serving the most keys (ties at random): a kill there takes the most owners away. */
  private busiest(): ChaosWorker {
    const owned = this.topology.workers.map((worker) => ({ worker, keys: this.keysOf(worker.id).length }));
    const most = Math.max(...owned.map((o) => o.keys));
    return this.pick(owned.filter((o) => o.keys === most)).worker;
  }

  private pick<T>(items: readonly T[]): T {
    return items[Math.floor(this.options.random() * items.length)]!;
  }

  private between(min: number, max: number): number {
    return Math.floor(min + this.options.random() * (max - min));
  }
}

function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}
