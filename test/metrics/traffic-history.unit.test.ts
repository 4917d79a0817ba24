import { describe, expect, it } from "vitest";
import { REFUSAL_KINDS } from "../../src/metrics/refusal-kinds.ts";
import {
  type HistoryPoint,
  type HistoryReply,
  SLOT_MS,
  SLOTS,
  TrafficHistory,
} from "../../src/metrics/traffic-history.ts";
import { historyReply } from "../../src/operator/replies.ts";
import { REFUSAL_ERRORS } from "../../src/placement/refusal.ts";

/**
 * The rolling traffic history behind GET /registry/history: 90 slots of 10 s in a ring, driven by
 * a clock the test moves. Every snapshot is parsed with the route's reply schema.
 */

/** A history on a clock that starts mid-slot, well after 1970. */
function clocked(start = 1_700_000_003_000) {
  const clock = { now: start };
  const history = new TrafficHistory({ now: () => clock.now });
  const read = (): HistoryReply => historyReply.parse(history.snapshot()) as HistoryReply;
  return { clock, history, read };
}

const empty = (at: number): HistoryPoint => ({ at, forwards: 0, refusals: {}, p50Ms: null, p99Ms: null });
const busy = (points: HistoryPoint[]) => points.filter((p) => p.forwards > 0 || Object.keys(p.refusals).length > 0);

describe("refusal kinds", () => {
  it("are every refusing resolution outcome plus bad_gateway and upstream_timeout, as the answer names them", () => {
    expect(new Set(REFUSAL_KINDS)).toEqual(
      new Set(["unknown-ns", ...Object.keys(REFUSAL_ERRORS), "bad_gateway", "upstream_timeout"]),
    );
    expect(REFUSAL_KINDS).not.toContain("forward");
  });
});

describe("TrafficHistory", () => {
  it("answers 90 empty slots of 10 s, oldest first, the last holding now", () => {
    const { clock, read } = clocked();
    const answer = read();
    expect(answer.slotMs).toBe(SLOT_MS);
    expect(answer.now).toBe(clock.now);
    const current = Math.floor(clock.now / SLOT_MS) * SLOT_MS;
    expect(answer.points).toEqual(Array.from({ length: SLOTS }, (_, i) => empty(current - (SLOTS - 1 - i) * SLOT_MS)));
    // On a slot's first millisecond, that slot is the last point.
    clock.now = current + SLOT_MS;
    expect(read().points.at(-1)!.at).toBe(clock.now);
  });

  it("counts forwards, refusals by kind and Pinboard's own 502/504 in the current slot", () => {
    const { history, read } = clocked();
    for (const ms of [4, 6, 8]) history.forward(200, ms / 1000, "worker");
    history.forward(502, 0.001, "pinboard");
    history.forward(504, 30, "pinboard");
    // A worker's own errors, its 502 and 504 included, are forwards, not refusals.
    history.forward(500, 0.002, "worker");
    history.forward(503, 0.002, "worker");
    history.forward(502, 0.002, "worker");
    history.forward(504, 0.002, "worker");
    history.resolution("forward");
    history.resolution("unknown-ns");
    history.resolution("unknown-ns");
    history.resolution("no-backends");
    history.resolution("nack");
    history.resolution("something-new");
    const last = read().points.at(-1)!;
    expect(last).toEqual({
      at: expect.any(Number),
      forwards: 9,
      refusals: { "unknown-ns": 2, "no-backends": 1, nack: 1, bad_gateway: 1, upstream_timeout: 1 },
      p50Ms: expect.any(Number),
      p99Ms: 30_000,
    });
    // The middle of nine samples (1, 2, 2, 2, 2, 4, 6, 8, 30000 ms) is 2 ms.
    expect(last.p50Ms).toBeGreaterThanOrEqual(2);
    expect(last.p50Ms).toBeLessThanOrEqual(2.2);
  });

  it("moves to a new slot every 10 s and lets a slot fall off after 15 minutes", () => {
    const { clock, history, read } = clocked();
    history.forward(200, 0.01, "worker");
    const first = read().points.at(-1)!.at;
    clock.now += SLOT_MS;
    history.forward(200, 0.02, "worker");
    history.forward(200, 0.02, "worker");
    expect(busy(read().points).map((p) => [p.at, p.forwards])).toEqual([
      [first, 1],
      [first + SLOT_MS, 2],
    ]);

    // 89 slots after the first, it is still the oldest point; one more and it is gone.
    clock.now += (SLOTS - 2) * SLOT_MS;
    expect(read().points[0]).toMatchObject({ at: first, forwards: 1 });
    clock.now += SLOT_MS;
    expect(read().points[0]).toMatchObject({ at: first + SLOT_MS, forwards: 2 });
    expect(busy(read().points).map((p) => p.at)).toEqual([first + SLOT_MS]);
  });

  it("reuses a ring entry for a later slot from zero", () => {
    const { clock, history, read } = clocked();
    history.forward(200, 0.0005, "worker"); // faster than the later one: a stale bin would be its p50
    history.resolution("quarantine");
    clock.now += SLOTS * SLOT_MS; // the same ring entry, 15 minutes later
    history.forward(200, 0.002, "worker");
    const points = busy(read().points);
    expect(points).toEqual([
      {
        at: Math.floor(clock.now / SLOT_MS) * SLOT_MS,
        forwards: 1,
        refusals: {},
        p50Ms: 2,
        p99Ms: 2,
      },
    ]);
  });

  it("shows nothing stale after an idle gap longer than 15 minutes", () => {
    const { clock, history, read } = clocked();
    for (let i = 0; i < SLOTS; i++) {
      history.forward(200, 0.003, "worker");
      history.resolution("inflight");
      clock.now += SLOT_MS;
    }
    expect(busy(read().points)).toHaveLength(SLOTS - 1);
    clock.now += 3 * 3600_000 + 4321;
    expect(busy(read().points)).toEqual([]);
    history.resolution("not-serving");
    expect(busy(read().points).map((p) => [p.forwards, p.refusals])).toEqual([[0, { "not-serving": 1 }]]);
  });

  it("drops a count from a clock gone back past the ring rather than wiping newer slots", () => {
    const { clock, history, read } = clocked();
    history.forward(200, 0.004, "worker");
    const before = read().points;
    clock.now -= SLOTS * SLOT_MS;
    history.forward(200, 0.004, "worker");
    history.resolution("quarantine");
    clock.now += SLOTS * SLOT_MS;
    expect(read().points).toEqual(before);
  });

  it("keeps each slot's percentiles to itself", () => {
    const { clock, history, read } = clocked();
    for (let i = 0; i < 99; i++) history.forward(200, 0.01, "worker");
    history.forward(200, 2, "worker");
    clock.now += SLOT_MS;
    for (let i = 0; i < 100; i++) history.forward(200, 1, "worker");
    const [older, newer] = busy(read().points);
    expect(older).toMatchObject({ forwards: 100 });
    expect(older!.p50Ms).toBeGreaterThanOrEqual(10);
    expect(older!.p50Ms).toBeLessThanOrEqual(11);
    expect(older!.p99Ms).toBeLessThanOrEqual(11);
    expect(newer).toMatchObject({ forwards: 100 });
    expect(newer!.p50Ms).toBeGreaterThanOrEqual(1000);
    expect(newer!.p99Ms).toBeLessThanOrEqual(1100);
  });
});
