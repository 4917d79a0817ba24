import { describe, expect, it } from "vitest";
import { LAPSED_RECHECK_MS } from "../../src/pinned/alarms.ts";
import { InstanceTable, RefusedError } from "../../src/pinned/instance-table.ts";
import { Lease } from "../../src/pinned/lease.ts";
import { MemoryDurabilityStore } from "../../src/pinned/memory-durability.ts";
import type { AlarmInfo, Instance, InstanceContext } from "../../src/pinned/types.ts";
import { memoryLogger, until } from "../support/local-worker.ts";

/** The worker's own view of its lease (Lease) and what a lapsed lease stops in the instance table. */

function clock(start = 1_000_000) {
  const c = { t: start, now: () => c.t };
  return c;
}

describe("Lease", () => {
  it("keeps its TTL when a renewal names none that is a positive number", () => {
    const c = clock();
    const lease = new Lease(c.now);
    lease.renewed(c.t, 3000);
    for (const ttl of [0, -1, "5000", null]) {
      lease.renewed(c.t, ttl);
      expect(lease.ttlMs).toBe(3000);
    }
    lease.renewed(c.t, 1);
    expect(lease.ttlMs).toBe(1);
  });

  it("is unhealthy while held and never renewed, even at clock time 0", () => {
    const lease = new Lease(() => 0);
    lease.held = true;
    expect(lease.healthy()).toBe(false);
    expect(lease.flaps).toBe(0);
  });

  it("counts the flap of a lease renewed before it was held", () => {
    const c = clock();
    const lease = new Lease(c.now);
    lease.renewed(c.t, 3000); // not held yet: healthy() answers without judging
    lease.held = true;
    c.t += 2001;
    expect(lease.healthy()).toBe(false);
    expect(lease.flaps).toBe(1);
  });

  it("counts one flap per healthy → unhealthy transition, however often it is asked", () => {
    const c = clock();
    const lease = new Lease(c.now);
    lease.held = true;
    lease.renewed(c.t, 3000);
    for (let i = 0; i < 3; i++) expect(lease.healthy()).toBe(true);
    expect(lease.flaps).toBe(0);
    c.t += 2001;
    for (let i = 0; i < 3; i++) expect(lease.healthy()).toBe(false);
    expect(lease.flaps).toBe(1);
  });

  it("holds until sentAt + TTL less 5% by the worker's clock, from the call's sending, not its answer", () => {
    const c = clock();
    const lease = new Lease(c.now);
    lease.held = true;
    expect(lease.lapsed()).toBe(false); // nothing granted yet: nothing to lose
    const sentAt = c.t;
    c.t += 400; // the answer takes 400 ms
    lease.renewed(sentAt, 2000);
    expect(lease.ttlMs).toBe(2000);
    expect(lease.lastRenewalAt).toBe(sentAt + 400);
    c.t = sentAt + 1899;
    expect(lease.lapsed()).toBe(false);
    c.t = sentAt + 1900;
    expect(lease.lapsed()).toBe(true);
    lease.renewed(c.t, undefined); // a renewal without expiresInMs keeps the TTL
    expect(lease.ttlMs).toBe(2000);
    expect(lease.lapsed()).toBe(false);
  });

  it("tells a renewal that comes after a lapse from one in time", () => {
    const c = clock();
    const lease = new Lease(c.now);
    lease.held = true;
    expect(lease.renewed(c.t, 2000)).toBe(false); // the first grant: nothing had lapsed
    c.t += 1899;
    expect(lease.renewed(c.t, 2000)).toBe(false); // renewed 1 ms before its view ran out
    c.t += 1900;
    expect(lease.renewed(c.t, 2000)).toBe(true); // its view had run out: instances may have moved
    expect(lease.lapsed()).toBe(false);
  });

  it("never lapses while not held (before start, after stop)", () => {
    const c = clock();
    const lease = new Lease(c.now);
    lease.renewed(c.t, 1000);
    c.t += 10_000;
    expect(lease.lapsed()).toBe(false);
    expect(lease.healthy()).toBe(true);
    lease.held = true;
    expect(lease.lapsed()).toBe(true);
  });

  it("turns unhealthy after 2/3 of the TTL (or leaseUnhealthyAfterMs) and counts each flap once", () => {
    const c = clock();
    const lease = new Lease(c.now);
    lease.held = true;
    expect(lease.healthy()).toBe(false); // never renewed
    expect(lease.flaps).toBe(0);
    lease.renewed(c.t, 3000);
    c.t += 2000;
    expect(lease.healthy()).toBe(true);
    c.t += 1;
    expect(lease.healthy()).toBe(false);
    expect(lease.healthy()).toBe(false);
    expect(lease.flaps).toBe(1);
    lease.renewed(c.t, 3000);
    expect(lease.healthy()).toBe(true);
    c.t += 2001;
    expect(lease.healthy()).toBe(false);
    expect(lease.flaps).toBe(2);

    const custom = new Lease(c.now, 500);
    custom.held = true;
    custom.renewed(c.t, 3000);
    c.t += 500;
    expect(custom.healthy()).toBe(true);
    c.t += 1;
    expect(custom.healthy()).toBe(false);
  });
});

class Noting implements Instance {
  static alarms = 0;
  constructor(readonly ctx: InstanceContext) {}
  fetch(): Response {
    return Response.json({ current: this.ctx.isCurrent() });
  }
  alarm(_ctx: InstanceContext, _info: AlarmInfo): void {
    Noting.alarms++;
  }
}

function table(lapsed: { value: boolean }) {
  return new InstanceTable({
    classes: new Map([["/n", Noting]]),
    store: new MemoryDurabilityStore(),
    maxInstances: 10,
    refusal: () => null,
    lapsed: () => lapsed.value,
    log: memoryLogger(),
    now: Date.now,
  });
}

describe("a lapsed lease in the instance table", () => {
  it("refuses every request of a resident activation at its own epoch and retires it for good; a newer placement serves once renewed", async () => {
    const lapsed = { value: false };
    const t = table(lapsed);
    const live = await t.acquire("/n", "a", "5");
    live.leave();
    expect(live.ctx.isCurrent()).toBe(true);

    lapsed.value = true;
    expect(live.ctx.isCurrent()).toBe(false);
    await expect(t.acquire("/n", "a", "5")).rejects.toEqual(new RefusedError("lease-lapsed"));
    expect(live.inflight).toBe(0);
    // Pinboard releases the placement on that refusal: the activation is gone for good.
    expect(live.state).toBe("retired");
    expect(t.get("/n", "a")).toBeUndefined();

    lapsed.value = false;
    expect(live.ctx.isCurrent()).toBe(false);
    // Renewed, a forward still on its way at that epoch finds no fresh activation either: the
    // instance may have another owner by now.
    await expect(t.acquire("/n", "a", "5")).rejects.toEqual(new RefusedError("epoch-ended"));
    expect(t.get("/n", "a")).toBeUndefined();
    const again = await t.acquire("/n", "a", "6");
    expect(again).not.toBe(live);
    again.leave();
    expect(again.ctx.isCurrent()).toBe(true);
    t.retire(again);
    expect(again.ctx.isCurrent()).toBe(false);
  });

  it("holds a due alarm until the lease is renewed", async () => {
    const lapsed = { value: false };
    const t = table(lapsed);
    const live = await t.acquire("/n", "b", "1");
    live.leave();
    const before = Noting.alarms;
    lapsed.value = true;
    await live.ctx.setAlarm(Date.now());
    // Past the first due moment and the first recheck: still held back, still stored.
    await new Promise((r) => setTimeout(r, LAPSED_RECHECK_MS + 300));
    expect(Noting.alarms).toBe(before);
    expect(live.alarm.get()).not.toBeNull();
    lapsed.value = false;
    await until(() => Noting.alarms === before + 1, 5000);
    await until(() => live.alarm.get() === null, 5000);
    t.retire(live);
  });
});
