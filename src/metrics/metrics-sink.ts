/** Who wrote a forward's answer: the worker, or Pinboard when the worker gave none (502, 504). */
export type ForwardAnswerer = "worker" | "pinboard";

/**
 * What the app reports as it works. The core keeps its own counters for /registry/health; the
 * Node entry adds a Prometheus registry behind the same calls (src/runtime/node/metrics/metrics.ts).
 */
export interface MetricsSink {
  resolution(outcome: string): void;
  /**
   * A finished forward: its status and duration, and who answered: the worker, or Pinboard itself
   * (502 bad gateway for an unreachable worker, 504 upstream timeout).
   */
  forward(status: number, seconds: number, answeredBy: ForwardAnswerer): void;
  /** Where the forwards in flight per worker session are read from, when asked (a scrape). */
  watchInflight(read: () => Iterable<[sessionId: string, count: number]>): void;
  /** Where the open proxied WebSockets per worker session are read from, when asked. */
  watchWebSockets(read: () => Iterable<[sessionId: string, count: number]>): void;
  connections(delta: number): void;
  script(name: string, seconds: number): void;
  sweep(kind: string, count: number): void;
}

/** The node-local counters /registry/health reports. */
export class HealthCounters implements MetricsSink {
  readonly resolutions: Record<string, number> = {};
  open = 0;

  resolution(outcome: string): void {
    this.resolutions[outcome] = (this.resolutions[outcome] ?? 0) + 1;
  }
  forward(): void {}
  watchInflight(): void {}
  watchWebSockets(): void {}
  connections(delta: number): void {
    this.open += delta;
  }
  script(): void {}
  sweep(): void {}
}

/** Fans every call out to several sinks (health counters, traffic history, Prometheus on Node). */
export function fanOut(sinks: MetricsSink[]): MetricsSink {
  return {
    resolution: (o) => {
      for (const s of sinks) s.resolution(o);
    },
    forward: (st, sec, by) => {
      for (const s of sinks) s.forward(st, sec, by);
    },
    watchInflight: (read) => {
      for (const s of sinks) s.watchInflight(read);
    },
    watchWebSockets: (read) => {
      for (const s of sinks) s.watchWebSockets(read);
    },
    connections: (d) => {
      for (const s of sinks) s.connections(d);
    },
    script: (n, sec) => {
      for (const s of sinks) s.script(n, sec);
    },
    sweep: (k, c) => {
      for (const s of sinks) s.sweep(k, c);
    },
  };
}
