import { describe, expect, it } from "vitest";
import { InstanceTable, RefusedError } from "../src/pinned/instance-table.ts";
import type { LiveInstance } from "../src/pinned/live-instance.ts";
import { MemoryDurabilityStore } from "../src/pinned/memory-durability.ts";
import { WindDowns } from "../src/pinned/wind-down.ts";
import { Counter } from "./support/worker-fixtures.ts";
import { memoryLogger, until } from "./support/worker-harness.ts";

/** wind_down handling inside the worker: the table and the wind-down scheduler, no network. */

function setup(graceMs = 2000) {
  const log = memoryLogger();
  const table = new InstanceTable({
    classes: new Map([["/counter", Counter]]),
    store: new MemoryDurabilityStore(),
    maxInstances: 100,
    refusal: () => null,
    log,
    now: Date.now,
  });
  const released: { ns: string; id: string; epoch: string }[] = [];
  const windDowns = new WindDowns({
    table,
    release: async (live: LiveInstance) => {
      released.push({ ns: live.ns, id: live.id, epoch: live.epoch });
      return true;
    },
    log,
    now: Date.now,
    graceMs,
  });
  return { table, windDowns, released };
}

const message = (id: string, deadline: number | null) => ({ msgId: "1", type: "wind_down", ns: "/counter", id, deadline });

describe("wind_down", () => {
  it("serves until the deadline, then refuses new requests, finishes in-flight ones, evicts and releases quoting the epoch", async () => {
    const { table, windDowns, released } = setup();
    const live = await table.acquire("/counter", "a", "42");
    live.leave();
    const inFlight = await table.acquire("/counter", "a", "42");

    windDowns.handle(message("a", 0.2));
    (await table.acquire("/counter", "a", "42")).leave();
    await new Promise((r) => setTimeout(r, 300));

    await expect(table.acquire("/counter", "a", "42")).rejects.toEqual(new RefusedError("winding-down"));
    expect(released).toEqual([]);
    expect(table.get("/counter", "a")).toBe(live);

    inFlight.leave();
    await until(() => released.length === 1);
    expect(released).toEqual([{ ns: "/counter", id: "a", epoch: "42" }]);
    expect(table.get("/counter", "a")).toBeUndefined();
    expect(live.state).toBe("retired");
  });

  it("evicts after the grace period even when a request never finishes", async () => {
    const { table, windDowns, released } = setup(200);
    await table.acquire("/counter", "b", "7");
    windDowns.handle(message("b", 0));
    await until(() => released.length === 1, 2000);
    expect(table.get("/counter", "b")).toBeUndefined();
  });

  it("is revoked by a null deadline", async () => {
    const { table, windDowns, released } = setup();
    (await table.acquire("/counter", "c", "1")).leave();
    windDowns.handle(message("c", 0.2));
    windDowns.handle(message("c", null));
    await new Promise((r) => setTimeout(r, 400));
    expect(released).toEqual([]);
    expect(table.get("/counter", "c")?.state).toBe("active");
  });

  it("lets the latest deadline win", async () => {
    const { table, windDowns, released } = setup();
    (await table.acquire("/counter", "d", "1")).leave();
    windDowns.handle(message("d", 0.1));
    windDowns.handle(message("d", 0.5));
    await new Promise((r) => setTimeout(r, 250));
    expect(released).toEqual([]);
    await until(() => released.length === 1, 2000);
  });

  it("does nothing when a newer epoch replaced the activation before the deadline", async () => {
    const { table, windDowns, released } = setup();
    (await table.acquire("/counter", "e", "1")).leave();
    windDowns.handle(message("e", 0.1));
    (await table.acquire("/counter", "e", "2")).leave();
    await new Promise((r) => setTimeout(r, 300));
    expect(released).toEqual([]);
    expect(table.get("/counter", "e")?.epoch).toBe("2");
  });

  it("ignores a wind_down for an instance that is not resident", async () => {
    const { windDowns, released } = setup();
    windDowns.handle(message("nobody", 0));
    await new Promise((r) => setTimeout(r, 50));
    expect(released).toEqual([]);
  });

  it("winds everything down at a timed operator drain's deadline", async () => {
    const { table, windDowns, released } = setup();
    (await table.acquire("/counter", "f", "1")).leave();
    (await table.acquire("/counter", "g", "2")).leave();
    windDowns.drain(true, 0.2);
    windDowns.drain(true, 0.2);
    await until(() => released.length === 2, 2000);
    expect(released.map((r) => r.id).sort()).toEqual(["f", "g"]);
  });

  it("cancels the drain deadline when the drain is lifted", async () => {
    const { table, windDowns, released } = setup();
    (await table.acquire("/counter", "h", "1")).leave();
    windDowns.drain(true, 0.2);
    windDowns.drain(false, undefined);
    await new Promise((r) => setTimeout(r, 400));
    expect(released).toEqual([]);
  });
});
