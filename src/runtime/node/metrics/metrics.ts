import { Counter, collectDefaultMetrics, Gauge, Histogram, Registry } from "prom-client";
import type { AppDeps } from "../../../deps/app-deps.ts";
import type { ForwardAnswerer, MetricsSink } from "../../../metrics/metrics-sink.ts";
import { type FleetSnapshot, fleetSnapshot } from "./fleet-snapshot.ts";

/** The fleet overview behind the gauges is read at most every 5 s, whatever the scrape rate. */
export const SNAPSHOT_TTL_MS = 5000;

const statusClass = (status: number): string => `${Math.floor(status / 100)}xx`;

/**
 * prom-client hashes the label object on every inc and observe; the hot path asks for a few
 * label values over and over, so each gets its bound child once (the label sets are small and
 * fixed: outcomes, status classes, script names).
 */
function boundBy<T>(bind: (value: string) => T): (value: string) => T {
  const bound = new Map<string, T>();
  return (value) => {
    let child = bound.get(value);
    if (child === undefined) bound.set(value, (child = bind(value)));
    return child;
  };
}

/**
 * The Node entry's Prometheus registry: counters and histograms fed through MetricsSink as the
 * app works, and gauges of the fleet (workers by state, placements per namespace, parked wakes)
 * collected from a memoized overview at scrape time. Across PINBOARD_PROCESSES processes
 * (src/runtime/node/metrics/cluster-metrics.ts) counters, histograms and the per-process gauges are summed; every
 * process reads the same fleet, so its gauges are taken from one process ("first"), not summed.
 */
export class PrometheusMetrics implements MetricsSink {
  readonly registry = new Registry();
  private deps: AppDeps | undefined;
  private snapshot: { at: number; value: Promise<FleetSnapshot> } | undefined;

  private readonly resolutions = new Counter({
    name: "pinboard_resolutions_total",
    help: "Resolutions by outcome",
    labelNames: ["outcome"],
    registers: [this.registry],
  });
  private readonly forwards = new Counter({
    name: "pinboard_forwards_total",
    help: "Forwards by status class",
    labelNames: ["status_class"],
    registers: [this.registry],
  });
  private readonly forwardFailures = new Counter({
    name: "pinboard_forward_failures_total",
    help: "Forwards Pinboard answered itself: 502 for an unreachable worker, 504 for none in time",
    labelNames: ["reason"],
    registers: [this.registry],
  });
  private readonly forwardSeconds = new Histogram({
    name: "pinboard_forward_duration_seconds",
    help: "Time to the worker's response headers",
    labelNames: ["status_class"],
    buckets: [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30],
    registers: [this.registry],
  });
  private readInflight: () => Iterable<[string, number]> = () => [];
  private readWebSockets: () => Iterable<[string, number]> = () => [];
  private readonly connectionsGauge = new Gauge({
    name: "pinboard_connections",
    help: "Open proxied WebSocket connections on this node",
    registers: [this.registry],
  });
  private readonly scriptSeconds = new Histogram({
    name: "pinboard_redis_script_duration_seconds",
    help: "Latency of Redis Lua scripts as seen by this node",
    labelNames: ["script"],
    buckets: [0.0005, 0.001, 0.002, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 1],
    registers: [this.registry],
  });
  private readonly sweeps = new Counter({
    name: "pinboard_sweeper_events_total",
    help: "Sweeper passes, wakes, alarms fired and entries parked",
    labelNames: ["kind"],
    registers: [this.registry],
  });

  constructor() {
    collectDefaultMetrics({ register: this.registry, prefix: "pinboard_" });
    const self = this;
    // Read at scrape time: setting a labelled gauge twice per forward cost the hot path more.
    new Gauge({
      name: "pinboard_inflight",
      help: "Forwards in flight per worker session on this node",
      labelNames: ["session"],
      registers: [this.registry],
      collect() {
        this.reset();
        for (const [session, count] of self.readInflight()) this.set({ session }, count);
      },
    });
    new Gauge({
      name: "pinboard_websockets",
      help: "Open proxied WebSockets per worker session on this node",
      labelNames: ["session"],
      registers: [this.registry],
      collect() {
        this.reset();
        for (const [session, count] of self.readWebSockets()) this.set({ session }, count);
      },
    });
    new Gauge({
      name: "pinboard_workers",
      aggregator: "first",
      help: "Live workers by state (live counts every live worker)",
      labelNames: ["state"],
      registers: [this.registry],
      async collect() {
        const s = await self.fleet();
        this.set({ state: "live" }, s.live);
        this.set({ state: "degraded" }, s.degraded);
        this.set({ state: "draining" }, s.draining);
      },
    });
    new Gauge({
      name: "pinboard_placements",
      aggregator: "first",
      help: "Live placements per namespace",
      labelNames: ["namespace"],
      registers: [this.registry],
      async collect() {
        this.reset();
        for (const [ns, count] of Object.entries((await self.fleet()).placements)) this.set({ namespace: ns }, count);
      },
    });
    new Gauge({
      name: "pinboard_wakes_parked",
      aggregator: "first",
      help: "Durability-sweep entries parked after repeated failures",
      registers: [this.registry],
      async collect() {
        this.set((await self.fleet()).parked);
      },
    });
  }

  /** The app's dependencies, for the fleet gauges (set once the app is built). */
  bind(deps: AppDeps): void {
    this.deps = deps;
  }

  private fleet(): Promise<FleetSnapshot> {
    const now = Date.now();
    if (!this.deps) return Promise.resolve({ live: 0, degraded: 0, draining: 0, placements: {}, parked: 0 });
    if (!this.snapshot || now - this.snapshot.at >= SNAPSHOT_TTL_MS) {
      const value = fleetSnapshot(this.deps);
      value.catch(() => (this.snapshot = undefined));
      this.snapshot = { at: now, value };
    }
    return this.snapshot.value;
  }

  private readonly resolutionOf = boundBy((outcome) => this.resolutions.labels({ outcome }));
  private readonly forwardsOf = boundBy((statusClass) => this.forwards.labels({ status_class: statusClass }));
  private readonly forwardSecondsOf = boundBy((statusClass) =>
    this.forwardSeconds.labels({ status_class: statusClass }),
  );
  private readonly scriptSecondsOf = boundBy((script) => this.scriptSeconds.labels({ script }));

  resolution(outcome: string): void {
    this.resolutionOf(outcome).inc();
  }
  forward(status: number, seconds: number, answeredBy: ForwardAnswerer): void {
    const cls = statusClass(status);
    this.forwardsOf(cls).inc();
    this.forwardSecondsOf(cls).observe(seconds);
    if (answeredBy === "pinboard") this.forwardFailures.inc({ reason: status === 504 ? "timeout" : "unreachable" });
  }
  watchInflight(read: () => Iterable<[string, number]>): void {
    this.readInflight = read;
  }
  watchWebSockets(read: () => Iterable<[string, number]>): void {
    this.readWebSockets = read;
  }
  connections(delta: number): void {
    this.connectionsGauge.inc(delta);
  }
  script(name: string, seconds: number): void {
    this.scriptSecondsOf(name).observe(seconds);
  }
  sweep(kind: string, count: number): void {
    if (count > 0) this.sweeps.inc({ kind }, count);
  }
}
