import { describe, expect, it } from "vitest";
import {
  cardState,
  meanHeadroom,
  readStats,
  SHORT_LEASE_MS,
  sortFleet,
  type Worker,
  type WorkerStats,
} from "../../src/console/page/fleet-order.ts";
import { perSecond } from "../../src/console/page/numbers.ts";
import { duration, readableJson, readableValue, relative } from "../../src/console/page/time.ts";

/**
 * The console's pure parts: a worker card's state and the fleet's order (trouble first), the
 * headroom scale, what a card reads from a worker's stats, and how times and rates are written.
 */

const NOW = 1_800_000_000_000;

function worker(clientId: string, fields: Partial<Worker> = {}): Worker {
  return {
    sessionId: `s-${clientId}`,
    clientId,
    advertiseUrl: "http://127.0.0.1:9000",
    namespaces: ["/a"],
    hostname: null,
    envs: {},
    takeover: null,
    headroom: 10,
    draining: false,
    expiry: NOW + 15_000,
    ...fields,
  };
}

describe("a worker card's state", () => {
  it("is the worst that applies: ejected, degraded, unreachable, lease running out, draining, ok", () => {
    const all = { ejectedUntil: NOW + 1, degradedSince: NOW - 1, draining: true, expiry: NOW + 1 };
    expect(cardState(worker("w", all), { reachable: false }, NOW)).toBe("ejected");
    expect(cardState(worker("w", { ...all, ejectedUntil: NOW }), { reachable: false }, NOW)).toBe("degraded");
    expect(cardState(worker("w", { draining: true, expiry: NOW + 1 }), { reachable: false }, NOW)).toBe("unreachable");
    expect(cardState(worker("w", { draining: true, expiry: NOW + SHORT_LEASE_MS - 1 }), undefined, NOW)).toBe(
      "lease-short",
    );
    expect(cardState(worker("w", { draining: true, expiry: NOW + SHORT_LEASE_MS }), undefined, NOW)).toBe("draining");
    const reachable: WorkerStats = { reachable: true, inflight: 0, sockets: 0, version: null };
    expect(cardState(worker("w"), reachable, NOW)).toBe("ok");
  });

  it("sorts the fleet trouble first, then by client id", () => {
    const stats = new Map<string, WorkerStats>([["s-c", { reachable: false }]]);
    const sorted = sortFleet(
      [worker("b"), worker("a"), worker("d", { draining: true }), worker("c"), worker("e", { degradedSince: NOW })],
      stats,
      NOW,
    );
    expect(sorted.map((w) => w.clientId)).toEqual(["e", "c", "d", "a", "b"]);
  });
});

describe("the fleet's headroom scale", () => {
  it("is the mean of the headrooms, a negative one counted as none", () => {
    expect(meanHeadroom([])).toBe(0);
    expect(meanHeadroom([worker("a", { headroom: 10 }), worker("b", { headroom: 30 })])).toBe(20);
    expect(meanHeadroom([worker("a", { headroom: -10 }), worker("b", { headroom: 30 })])).toBe(15);
  });
});

describe("what a card reads from a worker's stats", () => {
  it("sums inflight and sockets over the namespaces and takes a version string", () => {
    const stats = {
      namespaces: { "/a": { inflight: 2, sockets: 1 }, "/b": { inflight: 3, sockets: 0 } },
      version: "1.2.0",
    };
    expect(readStats({ stats })).toEqual({ reachable: true, inflight: 5, sockets: 1, version: "1.2.0" });
  });

  it("shows unknown for what the worker does not report, and unreachable for an error", () => {
    expect(readStats({ stats: { process: {} } })).toEqual({
      reachable: true,
      inflight: null,
      sockets: null,
      version: null,
    });
    expect(readStats({ stats: { namespaces: { "/a": { inflight: "2" } }, version: 3 } })).toEqual({
      reachable: true,
      inflight: null,
      sockets: null,
      version: null,
    });
    expect(readStats({ error: "unreachable" })).toEqual({ reachable: false });
    expect(readStats({ stats: null })).toEqual({ reachable: false });
  });
});

describe("times and rates as the console writes them", () => {
  it("writes durations in the largest fitting units", () => {
    expect(duration(-5)).toBe("0 s");
    expect(duration(89_400)).toBe("89 s");
    expect(duration(90_000)).toBe("2 min");
    expect(duration(89 * 60_000)).toBe("89 min");
    expect(duration(125 * 60_000)).toBe("2 h 5 min");
    expect(duration(50 * 3_600_000)).toBe("2 d 2 h");
  });

  it("writes times relative to now, never as milliseconds", () => {
    expect(relative(NOW - 12_000, NOW)).toBe("12 s ago");
    expect(relative(NOW + 180_000, NOW)).toBe("in 3 min");
    expect(relative(NOW + 999, NOW)).toBe("now");
    expect(relative(NOW - 1000, NOW)).toBe("1 s ago");
  });

  it("turns the times inside raw values into local times, and nothing else", () => {
    expect(readableValue("deadlineAt", NOW)).not.toBe(NOW);
    expect(String(readableValue("deadlineAt", NOW))).toMatch(/\d{1,2}:\d{2}:\d{2}/);
    expect(readableValue("alarm", NOW)).not.toBe(NOW);
    expect(readableValue("deadline", 300)).toBe(300);
    expect(readableValue("queued", NOW)).toBe(NOW);
    expect(readableValue("ejectedUntil", "soon")).toBe("soon");
    const json = readableJson({ instances: [{ activatedAt: NOW, inflight: 2 }], process: { uptimeMs: 5000 } });
    expect(json).not.toMatch(/1800000000000/);
    expect(json).toContain('"inflight": 2');
    expect(json).toContain('"uptimeMs": 5000');
  });

  it("writes a rate in a few digits", () => {
    expect(perSecond(0)).toBe("0");
    expect(perSecond(-1)).toBe("0");
    expect(perSecond(12.4)).toBe("12");
    expect(perSecond(3.44)).toBe("3.4");
    expect(perSecond(0.254)).toBe("0.25");
    expect(perSecond(0.0042)).toBe("0.004");
  });
});
