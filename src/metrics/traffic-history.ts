import { BIN_COUNT, binOf, percentileMs } from "./latency-bins.ts";
import type { ForwardAnswerer, MetricsSink } from "./metrics-sink.ts";
import { REFUSAL_KINDS, type RefusalKind } from "./refusal-kinds.ts";

/** What this module uses of the app's dependencies. */
export interface HistoryDeps {
  now: () => number;
}

export const SLOT_MS = 10_000;
/** 15 minutes of slots. */
export const SLOTS = 90;

const KIND_COUNT = REFUSAL_KINDS.length;
const KIND_INDEX: ReadonlyMap<string, number> = new Map(REFUSAL_KINDS.map((kind, i) => [kind, i]));
const BAD_GATEWAY = KIND_INDEX.get("bad_gateway")!;
const UPSTREAM_TIMEOUT = KIND_INDEX.get("upstream_timeout")!;

export interface HistoryPoint {
  /** The slot's start (ms). */
  at: number;
  forwards: number;
  /** Only the kinds counted in the slot. */
  refusals: Partial<Record<RefusalKind, number>>;
  p50Ms: number | null;
  p99Ms: number | null;
}

/** GET /registry/history. */
export interface HistoryReply {
  slotMs: typeof SLOT_MS;
  now: number;
  /** SLOTS points, oldest first; the last is the slot `now` falls in. */
  points: HistoryPoint[];
}

/** A ring index for a slot number (a clock before 1970 included). */
const ringIndex = (slot: number) => ((slot % SLOTS) + SLOTS) % SLOTS;

/**
 * This node's (this isolate's) last 15 minutes of traffic in 10 s slots: forwards, refusals by
 * kind and a latency histogram per slot. A ring indexed by slot number, each entry tagged with
 * the slot it holds: an entry is cleared when a later slot first writes to it, and an entry whose
 * tag is not the slot asked for reads empty, so a long idle gap shows nothing stale. Every array
 * is allocated once; recording a forward allocates nothing.
 */
export class TrafficHistory implements MetricsSink {
  private readonly heldSlot = new Float64Array(SLOTS).fill(Number.NEGATIVE_INFINITY);
  private readonly forwards = new Uint32Array(SLOTS);
  private readonly refusals = new Uint32Array(SLOTS * KIND_COUNT);
  private readonly latency = new Uint32Array(SLOTS * BIN_COUNT);
  private readonly maxMs = new Float64Array(SLOTS);

  constructor(private readonly deps: HistoryDeps) {}

  resolution(outcome: string): void {
    const kind = KIND_INDEX.get(outcome);
    if (kind === undefined) return;
    const at = this.entryNow();
    if (at >= 0) this.refusals[at * KIND_COUNT + kind]!++;
  }

  forward(status: number, seconds: number, answeredBy: ForwardAnswerer): void {
    const at = this.entryNow();
    if (at < 0) return;
    const ms = seconds * 1000;
    this.forwards[at]!++;
    this.latency[at * BIN_COUNT + binOf(ms)]!++;
    if (ms > this.maxMs[at]!) this.maxMs[at] = ms;
    if (answeredBy === "worker") return;
    if (status === 502) this.refusals[at * KIND_COUNT + BAD_GATEWAY]!++;
    else if (status === 504) this.refusals[at * KIND_COUNT + UPSTREAM_TIMEOUT]!++;
  }

  watchInflight(): void {}
  watchWebSockets(): void {}
  connections(): void {}
  script(): void {}
  sweep(): void {}

  /** The last SLOTS slots, oldest first, the current (partial) one last; empty ones read zero. */
  snapshot(): HistoryReply {
    const now = this.deps.now();
    const current = Math.floor(now / SLOT_MS);
    const points: HistoryPoint[] = [];
    for (let slot = current - SLOTS + 1; slot <= current; slot++) points.push(this.pointOf(slot));
    return { slotMs: SLOT_MS, now, points };
  }

  private pointOf(slot: number): HistoryPoint {
    const at = ringIndex(slot);
    if (this.heldSlot[at] !== slot) return { at: slot * SLOT_MS, forwards: 0, refusals: {}, p50Ms: null, p99Ms: null };
    const refusals: Partial<Record<RefusalKind, number>> = {};
    for (let k = 0; k < KIND_COUNT; k++) {
      const count = this.refusals[at * KIND_COUNT + k]!;
      if (count > 0) refusals[REFUSAL_KINDS[k]!] = count;
    }
    const forwards = this.forwards[at]!;
    const offset = at * BIN_COUNT;
    const max = this.maxMs[at]!;
    return {
      at: slot * SLOT_MS,
      forwards,
      refusals,
      p50Ms: percentileMs(this.latency, offset, forwards, 50, max),
      p99Ms: percentileMs(this.latency, offset, forwards, 99, max),
    };
  }

  /**
   * The ring entry of the slot the clock is in, cleared first when it still holds an older slot;
   * -1 when it holds a later one (the clock went back by more than the ring: the count is dropped
   * rather than wiping newer data).
   */
  private entryNow(): number {
    const slot = Math.floor(this.deps.now() / SLOT_MS);
    const at = ringIndex(slot);
    const held = this.heldSlot[at]!;
    if (held === slot) return at;
    if (held > slot) return -1;
    this.heldSlot[at] = slot;
    this.forwards[at] = 0;
    this.maxMs[at] = 0;
    this.refusals.fill(0, at * KIND_COUNT, (at + 1) * KIND_COUNT);
    this.latency.fill(0, at * BIN_COUNT, (at + 1) * BIN_COUNT);
    return at;
  }
}
