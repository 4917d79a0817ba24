import { describe, expect, it } from "vitest";
import { createWorker, type PinnedWorker } from "../../src/pinned/index.ts";
import type { Listening } from "../../src/pinned/node-server.ts";
import { Keys } from "../../src/redis/keys.ts";
import { type Fleet, useCounterFleet } from "../support/fleet.ts";
import { consoleFormatLogger, until } from "../support/local-worker.ts";
import { Counter } from "../support/sample-instances.ts";

/**
 * Two live processes with one clientId replace each other's session at every heartbeat
 * (client-id-clash.ts). The worker says so on one line and backs off; a worker whose lease
 * really ran out re-registers at once, with no word of another process.
 */

/** Heartbeats every second; the clash backoff runs from 1 s to 12 s (four leases). */
const LEASE_MS = 3000;
const CLASH_LINE =
  "warn [pinned] session replaced, re-registering later retryInMs=1000: " +
  'clientId "worker-a" is held by another live process (its registration replaced this one): ' +
  "give each process its own clientId (the clientId option or CLIENT_ID)";

let fleet: Fleet;
let operator: string;
useCounterFleet(LEASE_MS, (f) => ({ fleet, operator } = f));

interface Started {
  worker: PinnedWorker;
  listening: Listening;
  logger: ReturnType<typeof consoleFormatLogger>;
}

async function startWorker(clientId: string, fetchImpl?: typeof fetch): Promise<Started> {
  const logger = consoleFormatLogger();
  const worker = createWorker({
    pinboardUrl: fleet.pb.url,
    credential: await fleet.pb.workerCredential(),
    clientId,
    namespaces: { "/counter": Counter },
    logger,
    fetch: fetchImpl,
  });
  const listening = await worker.listen();
  await worker.start();
  return { worker, listening, logger };
}

async function stopAll(started: Started[]): Promise<void> {
  for (const { worker, listening } of started) {
    await worker.stop();
    await listening.close();
  }
}

/** worker.registered entries of `clientId` in Pinboard's audit trail. */
async function registrations(clientId: string): Promise<number> {
  const res = await fetch(`${fleet.pb.url}/registry/audit?type=worker.registered&clientId=${clientId}&limit=500`, {
    headers: { authorization: `Bearer ${operator}` },
  });
  expect(res.status).toBe(200);
  const { entries } = (await res.json()) as { entries: Array<{ target: { clientId?: string } }> };
  return entries.filter((e) => e.target.clientId === clientId).length;
}

/** The live sessions Pinboard lists, with their lease's expiry. */
async function liveSessions(): Promise<Map<string, number>> {
  const res = await fetch(`${fleet.pb.url}/registry/workers`, { headers: { authorization: `Bearer ${operator}` } });
  expect(res.status).toBe(200);
  const { workers } = (await res.json()) as { workers: Array<{ sessionId: string; expiry: number }> };
  return new Map(workers.map((w) => [w.sessionId, w.expiry]));
}

describe("two live processes with one clientId", () => {
  it("say so on one line and back off, so the registrations stay few", async () => {
    const before = await registrations("worker-a");
    const started = [await startWorker("worker-a"), await startWorker("worker-a")];
    try {
      const lines = () => started.flatMap((s) => s.logger.lines);
      await until(() => lines().some((l) => l.includes("is held by another live process")), 10_000);
      const clash = lines().filter((l) => l.includes("is held by another live process"));
      expect(clash[0]).toBe(CLASH_LINE);
      // Replacing each other at every heartbeat, the two would register about twice a second.
      const windowStart = await registrations("worker-a");
      await new Promise((resolve) => setTimeout(resolve, 12_000));
      const inWindow = (await registrations("worker-a")) - windowStart;
      expect(inWindow, lines().join("\n")).toBeLessThanOrEqual(8);
      expect(windowStart - before).toBeGreaterThanOrEqual(4);
      // Every backoff said why, and no line reads as if nothing were wrong with the name.
      const backoffs = lines().filter((l) => l.includes("session replaced, re-registering later"));
      expect(backoffs).toEqual(lines().filter((l) => l.includes("is held by another live process")));
    } finally {
      await stopAll(started);
    }
  }, 40_000);

  it("two clientIds of their own: no replacement, no word of it", async () => {
    const started = [await startWorker("worker-b"), await startWorker("worker-c")];
    try {
      const ids = started.map((s) => s.worker.sessionId!);
      const registered = await liveSessions();
      // A heartbeat of each renews its lease: neither session was replaced.
      await until(async () => {
        const live = await liveSessions();
        return ids.every((id) => (live.get(id) ?? 0) > (registered.get(id) ?? Number.POSITIVE_INFINITY));
      }, LEASE_MS);
      expect(started.map((s) => s.worker.sessionId)).toEqual(ids);
      expect(started.flatMap((s) => s.logger.lines).filter((l) => l.includes("session"))).toEqual([]);
    } finally {
      await stopAll(started);
    }
  });
});

describe("a session Redis lost while its lease held", () => {
  it("is re-registered at once, each time it happens between heartbeats that succeed", async () => {
    const sessions = new Keys("pinboard:", 16).sessions;
    const started = await startWorker("worker-e");
    const { worker, logger } = started;
    try {
      for (let loss = 1; loss <= 2; loss++) {
        const sessionId = worker.sessionId!;
        // As a Redis that restarted empty would: the record is gone, the lease was fresh.
        expect(await fleet.t.redis.client.hdel(sessions, sessionId)).toBe(1);
        await until(() => worker.sessionId !== null && worker.sessionId !== sessionId, LEASE_MS);
        // A heartbeat of the new session succeeds (its lease is renewed) before the next loss.
        const registered = await until(async () => (await liveSessions()).get(worker.sessionId!), LEASE_MS);
        await until(async () => ((await liveSessions()).get(worker.sessionId!) ?? 0) > registered, LEASE_MS);
      }
      expect(logger.lines.filter((l) => l.includes("session"))).toEqual([
        "warn [pinned] session lost, re-registering: unknown session",
        "warn [pinned] session lost, re-registering: unknown session",
      ]);
      expect(worker.stats().reregistrations).toBe(2);
    } finally {
      await stopAll([started]);
    }
  }, 30_000);
});

describe("a worker whose lease ran out (cut off from Pinboard past it)", () => {
  it("re-registers at once, every time, with no word of another process", async () => {
    // Heartbeats fail as if the network were down, except the ones let through.
    let heartbeatsLetThrough = Number.POSITIVE_INFINITY;
    const partitioned: typeof fetch = (input, init) => {
      if (new URL(String(input)).pathname.endsWith("/registry/heartbeat")) {
        if (heartbeatsLetThrough <= 0) return Promise.reject(new TypeError("fetch failed: partitioned"));
        heartbeatsLetThrough--;
      }
      return fetch(input, init);
    };
    const started = await startWorker("worker-d", partitioned);
    const { worker, logger } = started;
    try {
      // Twice in a row: the session of the re-register, too, runs out before a heartbeat of it succeeds.
      for (let loss = 1; loss <= 2; loss++) {
        const sessionId = worker.sessionId!;
        heartbeatsLetThrough = 0;
        await until(async () => !(await liveSessions()).has(sessionId), 10_000);
        heartbeatsLetThrough = 1;
        await until(() => worker.sessionId !== null && worker.sessionId !== sessionId, LEASE_MS);
        expect(worker.stats().reregistrations).toBe(loss);
      }
      const lost = logger.lines.filter((l) => l.includes("session"));
      expect(lost).toEqual([
        "warn [pinned] session lost, re-registering: unknown session",
        "warn [pinned] session lost, re-registering: unknown session",
      ]);
    } finally {
      heartbeatsLetThrough = Number.POSITIVE_INFINITY;
      await stopAll([started]);
    }
  }, 40_000);
});
