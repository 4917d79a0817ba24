import { describe, expect, it } from "vitest";
import { InstanceTable, RefusedError } from "../../src/pinned/instance-table.ts";
import type { LiveInstance } from "../../src/pinned/live-instance.ts";
import { MemoryDurabilityStore } from "../../src/pinned/memory-durability.ts";
import { WindDowns } from "../../src/pinned/wind-down.ts";
import { memoryLogger, until } from "../support/local-worker.ts";
import { Counter } from "../support/sample-instances.ts";

/** wind_down handling inside the worker: the table and the wind-down scheduler, no network. */

function setup(graceMs = 2000) {
  const log = memoryLogger();
  const table = new InstanceTable({
    classes: new Map([["/counter", Counter]]),
    store: new MemoryDurabilityStore(),
    maxInstances: 100,
    refusal: () => null,
    lapsed: () => false,
    log,
    now: Date.now,
  });
  const released: { ns: string; id: string; epoch: string }[] = [];
  /** The ids of each release call, in order. */
  const calls: string[][] = [];
  const windDowns: WindDowns = new WindDowns({
    table,
    release: async (lives: LiveInstance[]) => {
      calls.push(lives.map((live) => live.id));
      for (const live of lives) released.push({ ns: live.ns, id: live.id, epoch: live.epoch });
      return true;
    },
    // What drain-end.ts does first at the deadline (its test is test/pinned/drain-end.test.ts).
    drainDeadlinePassed: () => void windDowns.windDownAll(),
    log,
    now: Date.now,
    graceMs,
  });
  return { table, windDowns, released, calls };
}

/** setup(), with a /counter instance `id` resident at epoch 1 (acquired and left). */
async function setupHolding(id: string) {
  const s = setup();
  (await s.table.acquire("/counter", id, "1")).leave();
  return s;
}

const message = (id: string, deadline: number | null) => ({
  msgId: "1",
  type: "wind_down",
  ns: "/counter",
  id,
  deadline,
});

let sentinels = 0;

/**
 * Returns once every timer the scheduler set for `deadline` seconds (or earlier) before this call
 * has had its turn, so that a test can assert what such a timer did not do without sleeping and
 * hoping: a sentinel instance is wound down with the same deadline, scheduled after them, and
 * waited for until it is released. Node runs timers of one duration in the order they were set,
 * and shorter-due ones before; a wind-down that does start marks its instance `closing` at once.
 * Returns the sentinel's id (it is in `released`).
 */
async function afterTimersDue(s: ReturnType<typeof setup>, deadline: number): Promise<string> {
  const id = `sentinel-${++sentinels}`;
  (await s.table.acquire("/counter", id, "1")).leave();
  s.windDowns.handle(message(id, deadline));
  await until(() => s.released.some((r) => r.id === id), 10_000);
  return id;
}

describe("wind_down", () => {
  it("serves until the deadline, then refuses new requests, finishes in-flight ones, evicts and releases quoting the epoch", async () => {
    // A grace far beyond the test: the instance may only go once the request in flight is done.
    const { table, windDowns, released } = setup(60_000);
    const live = await table.acquire("/counter", "a", "42");
    live.leave();
    const inFlight = await table.acquire("/counter", "a", "42");

    windDowns.handle(message("a", 0.2));
    (await table.acquire("/counter", "a", "42")).leave();
    // The deadline passes: from then on the activation is closing.
    await until(() => live.closing, 10_000);

    await expect(table.acquire("/counter", "a", "42")).rejects.toEqual(new RefusedError("winding-down"));
    expect(released).toEqual([]);
    expect(table.get("/counter", "a")).toBe(live);

    inFlight.leave();
    await until(() => released.length === 1, 10_000);
    expect(released).toEqual([{ ns: "/counter", id: "a", epoch: "42" }]);
    expect(table.get("/counter", "a")).toBeUndefined();
    expect(live.state).toBe("retired");
  });

  it("counts the deadline from the heartbeat's sending: a message that took 900 ms to arrive has 100 ms of 1 s left", async () => {
    const { table, windDowns } = setup(60_000);
    const late = await table.acquire("/counter", "late", "3");
    late.leave();
    const prompt = await table.acquire("/counter", "prompt", "3");
    prompt.leave();
    windDowns.handle(message("late", 1), 900);
    windDowns.handle(message("prompt", 1), 0);
    await until(() => late.closing, 10_000);
    expect(prompt.closing).toBe(false);
    await until(() => prompt.closing, 10_000);
  });

  it("evicts after the grace period even when a request never finishes", async () => {
    const { table, windDowns, released } = setup(200);
    await table.acquire("/counter", "b", "7");
    windDowns.handle(message("b", 0));
    await until(() => released.length === 1, 10_000);
    expect(table.get("/counter", "b")).toBeUndefined();
  });

  it("is revoked by a null deadline", async () => {
    const s = await setupHolding("c");
    const { table, windDowns, released } = s;
    windDowns.handle(message("c", 0.2));
    windDowns.handle(message("c", null));
    const sentinel = await afterTimersDue(s, 0.2);
    expect(released).toEqual([{ ns: "/counter", id: sentinel, epoch: "1" }]);
    expect(table.get("/counter", "c")?.state).toBe("active");
    expect(table.get("/counter", "c")?.closing).toBe(false);
  });

  it("lets the latest deadline win", async () => {
    const s = await setupHolding("d");
    const { table, windDowns, released } = s;
    const d = table.get("/counter", "d")!;
    const handledAt = Date.now();
    windDowns.handle(message("d", 0.1));
    windDowns.handle(message("d", 0.5));
    // The first deadline passed without effect.
    const sentinel = await afterTimersDue(s, 0.1);
    expect(released).toEqual([{ ns: "/counter", id: sentinel, epoch: "1" }]);
    expect(d.closing).toBe(false);
    // The second one winds it down, not before it is due.
    await until(() => released.some((r) => r.id === "d"), 10_000);
    expect(Date.now() - handledAt).toBeGreaterThanOrEqual(490);
    expect(released).toEqual([
      { ns: "/counter", id: sentinel, epoch: "1" },
      { ns: "/counter", id: "d", epoch: "1" },
    ]);
  });

  it("does nothing when a newer epoch replaced the activation before the deadline", async () => {
    const s = await setupHolding("e");
    const { table, windDowns, released } = s;
    windDowns.handle(message("e", 0.1));
    (await table.acquire("/counter", "e", "2")).leave();
    const sentinel = await afterTimersDue(s, 0.1);
    expect(released).toEqual([{ ns: "/counter", id: sentinel, epoch: "1" }]);
    expect(table.get("/counter", "e")?.epoch).toBe("2");
    expect(table.get("/counter", "e")?.closing).toBe(false);
  });

  it("ignores a wind_down for an instance that is not resident", async () => {
    const s = setup();
    const { table, windDowns, released } = s;
    windDowns.handle(message("nobody", 0));
    const sentinel = await afterTimersDue(s, 0);
    expect(released).toEqual([{ ns: "/counter", id: sentinel, epoch: "1" }]);
    expect(table.get("/counter", "nobody")).toBeUndefined();
  });

  it("winds everything down at a timed operator drain's deadline", async () => {
    const { table, windDowns, released } = setup();
    (await table.acquire("/counter", "f", "1")).leave();
    (await table.acquire("/counter", "g", "2")).leave();
    windDowns.drain(true, Date.now() + 200);
    windDowns.drain(true, Date.now() + 200);
    await until(() => released.length === 2, 10_000);
    expect(released.map((r) => r.id).sort()).toEqual(["f", "g"]);
  });

  it("cancels the drain deadline when the drain is lifted", async () => {
    const s = await setupHolding("h");
    const { table, windDowns, released } = s;
    windDowns.drain(true, Date.now() + 200);
    windDowns.drain(false, undefined);
    // Had the drain's timer fired, it would have wound down every instance, the sentinel too.
    const sentinel = await afterTimersDue(s, 0.2);
    expect(released).toEqual([{ ns: "/counter", id: sentinel, epoch: "1" }]);
    expect(table.get("/counter", "h")?.state).toBe("active");
    expect(table.get("/counter", "h")?.closing).toBe(false);
  });
});

describe("handOver (a graceful stop)", () => {
  it("refuses new requests at once, releases idle instances in one call, a busy one once its request is done", async () => {
    const { table, windDowns, released, calls } = setup();
    for (const [id, epoch] of [
      ["i1", "5"],
      ["i2", "6"],
      ["busy", "7"],
    ] as const) {
      (await table.acquire("/counter", id, epoch)).leave();
    }
    const inFlight = await table.acquire("/counter", "busy", "7");
    const handing = windDowns.handOver(60_000);
    // Refused at once, every one of them: the in-band refusal makes Pinboard re-place elsewhere.
    for (const [id, epoch] of [
      ["i1", "5"],
      ["busy", "7"],
    ] as const) {
      await expect(table.acquire("/counter", id, epoch)).rejects.toEqual(new RefusedError("winding-down"));
    }
    await until(() => calls.length === 1, 10_000);
    expect(calls).toEqual([["i1", "i2"]]);
    // Timers run in order of their due time: one due later than a grace cut short would have been.
    await new Promise((r) => setTimeout(r, 100));
    expect(calls).toEqual([["i1", "i2"]]);
    expect(table.get("/counter", "busy")?.state).toBe("active");

    inFlight.leave();
    await handing;
    expect(calls).toEqual([["i1", "i2"], ["busy"]]);
    expect(released).toEqual([
      { ns: "/counter", id: "i1", epoch: "5" },
      { ns: "/counter", id: "i2", epoch: "6" },
      { ns: "/counter", id: "busy", epoch: "7" },
    ]);
    expect(table.size).toBe(0);
  });

  it("releases a busy instance after the grace even when its request never finishes", async () => {
    const { table, windDowns, calls } = setup();
    await table.acquire("/counter", "stuck", "3");
    await windDowns.handOver(100);
    expect(calls).toEqual([["stuck"]]);
    expect(table.get("/counter", "stuck")).toBeUndefined();
  });
});
