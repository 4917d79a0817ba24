import type { Fault, Operation } from "./history.ts";
import { restartRedisEmpty, type Topology } from "./topology.ts";

/**
 * The nemesis: one fault at a time, chosen at random among those the topology allows, held for a
 * while, healed, then a quiet gap. Faults that take an owner away (kill -9, a SIGSTOP longer than
 * the lease) record the keys that worker served last, whose recovery the checker measures.
 */

export type FaultKind = Fault["kind"];

export interface NemesisOptions {
  kinds: FaultKind[];
  random: () => number;
  /** Quiet time between two faults (ms): [min, max). */
  gapMs: [number, number];
  /** Recent operations, to tell which keys a worker owns. */
  operations: () => readonly Operation[];
}

const PROXY_MODES = ["drop", "delay", "blackhole", "reset"] as const;

export class Nemesis {
  readonly faults: Fault[] = [];
  private stopping = false;
  private failovers = 0;

  constructor(
    private readonly topology: Topology,
    private readonly options: NemesisOptions,
  ) {}

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
      const kind = this.pick(this.options.kinds);
      if (kind === "cluster-failover" && this.failovers >= 2) continue; // one replica per primary
      this.faults.push(await this.inject(kind));
    }
  }

  stop(): void {
    this.stopping = true;
  }

  private async inject(kind: FaultKind): Promise<Fault> {
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
        const worker = this.pick(this.topology.workers);
        const keys = this.keysOf(worker.id);
        await worker.process.kill();
        await sleep(this.between(1000, 3000));
        await worker.process.start();
        return fault(worker.id, { keys });
      }
      case "pause-worker": {
        const worker = this.pick(this.topology.workers);
        const keys = this.keysOf(worker.id);
        worker.process.pause();
        await sleep(lease + this.between(1000, 3000)); // past its lease: a zombie when it wakes
        worker.process.resume();
        return fault(worker.id, { keys });
      }
      case "proxy-pinboard-redis":
      case "proxy-pinboard-worker":
      case "proxy-worker-store":
        return this.proxyFault(kind, start);
      case "redis-restart-empty":
        await restartRedisEmpty(this.topology);
        return fault("redis");
      case "cluster-failover": {
        const cluster = this.topology.cluster!;
        const primary = this.pick(await cluster.primaries()).node;
        this.failovers++;
        await cluster.kill(primary.port);
        await cluster.waitUntilOk(30_000);
        return fault(primary.address);
      }
      case "kill-pinboard": {
        const node = this.pick(this.topology.pinboards);
        await node.process.kill();
        await sleep(this.between(1000, 4000));
        await node.process.start(async () => (await fetch(`${node.url}/healthz`)).ok);
        return fault(`pinboard${node.index}`);
      }
    }
  }

  private async proxyFault(kind: FaultKind, start: number): Promise<Fault> {
    const proxies =
      kind === "proxy-pinboard-redis"
        ? this.topology.pinboards.flatMap((n) => (n.redisProxy ? [n.redisProxy] : []))
        : kind === "proxy-pinboard-worker"
          ? this.topology.workers.map((w) => w.advertiseProxy)
          : this.topology.workers.map((w) => w.storeProxy);
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
