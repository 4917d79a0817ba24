import { describe, expect, it } from "vitest";
import type { AuditEntry } from "../../src/audit/entry.ts";
import type { PinnedWorker } from "../../src/pinned/index.ts";
import { Keys, SINGLE_ENV } from "../../src/redis/keys.ts";
import { type Fleet, useCounterFleet } from "../support/fleet.ts";
import { consoleFormatLogger, until } from "../support/local-worker.ts";
import { untilServed } from "../support/pinboard-calls.ts";
import { spawnWorkerProcess } from "../support/spawn-worker.ts";

/**
 * The end of a timed operator drain, against the real Pinboard: at the deadline the worker stops
 * serving for good (no re-register loop), logs one line, and tells its process (worker.drained,
 * onDrained, handleShutdownSignals exits 0). A cordon and a drain lifted in time change nothing.
 */

const LEASE_MS = 3000;
/** Heartbeats come every LEASE_MS / 3: this window holds six of them. */
const QUIET_WINDOW_MS = 2 * LEASE_MS;
let fleet: Fleet;
let operator: string;

useCounterFleet(LEASE_MS, (f) => ({ fleet, operator } = f));

const line = (clientId: string) =>
  `warn [pinned] drained by the operator (clientId "${clientId}"): the drain deadline passed and this worker no ` +
  `longer serves; to serve again, start it under another clientId (Pinboard holds the drain of "${clientId}" ` +
  "for 7 days past its deadline)";

const op = async (path: string, body: unknown) => {
  const res = await fetch(`${fleet.pb.url}${path}`, {
    method: "POST",
    headers: { authorization: `Bearer ${operator}`, "content-type": "application/json" },
    body: JSON.stringify(body),
  });
  return { status: res.status, body: (await res.json()) as unknown };
};

/** The worker.registered entries of the audit trail for `clientId`. */
async function registeredEntries(clientId: string): Promise<AuditEntry[]> {
  const res = await fetch(`${fleet.pb.url}/registry/audit?type=worker.registered&limit=500`, {
    headers: { authorization: `Bearer ${operator}` },
  });
  expect(res.status).toBe(200);
  const { entries } = (await res.json()) as { entries: AuditEntry[] };
  return entries.filter((e) => (e.target as { clientId?: string }).clientId === clientId);
}

async function listed(clientId: string): Promise<boolean> {
  const res = await fetch(`${fleet.pb.url}/registry/workers`, { headers: { authorization: `Bearer ${operator}` } });
  const { workers } = (await res.json()) as { workers: { clientId: string }[] };
  return workers.some((w) => w.clientId === clientId);
}

/** A fleet worker whose calls to Pinboard are counted by path, and whose log is kept. */
async function countedWorker(clientId: string, onDrained?: () => void) {
  const calls: string[] = [];
  const logger = consoleFormatLogger();
  const w = await fleet.addWorker({
    clientId,
    logger,
    onDrained,
    fetch: (input, init) => {
      calls.push(new URL(String(input)).pathname);
      return fetch(input, init);
    },
  });
  const count = (path: string) => calls.filter((p) => p === `/registry/${path}`).length;
  return { ...w, logger, count };
}

/** Whether `worker.drained` has settled, without waiting for it. */
async function settled(worker: PinnedWorker): Promise<boolean> {
  return Promise.race([worker.drained.then(() => true), new Promise<boolean>((r) => setTimeout(() => r(false), 0))]);
}

const placementRow = async (id: string) => {
  const keys = new Keys("pinboard:", 16);
  return fleet.t.redis.client.hget(keys.placements(await keys.bucketOf(id), SINGLE_ENV, "/counter"), id);
};

describe("a timed operator drain's deadline", () => {
  it("ends the worker: instances released, session given up, no re-register, one line, drained and onDrained", async () => {
    let onDrained = 0;
    const w = await countedWorker("drain-end-a", () => onDrained++);
    expect((await fetch(`${fleet.pb.url}/counter/de1/increment`, { method: "POST" })).status).toBe(200);
    expect(w.worker.instances().map((i) => i.id)).toEqual(["de1"]);
    expect(await placementRow("de1")).not.toBeNull();

    expect(await op("/registry/drain", { clientId: "drain-end-a", deadline: 1 })).toEqual({
      status: 200,
      body: { drained: true },
    });
    // The deadline is max(1 s, lease) away.
    await until(() => settled(w.worker), LEASE_MS + 5000);
    expect(onDrained).toBe(1);
    // One line says it all: no refused release or deregister beside it.
    expect(w.logger.lines.filter((l) => !l.startsWith("info "))).toEqual([line("drain-end-a")]);
    expect(w.worker.instances()).toEqual([]);
    expect(w.worker.sessionId).toBeNull();
    expect(await placementRow("de1")).toBeNull();
    // The worker ends a little before Pinboard's deadline (drainEndsAt); its record goes at the deadline.
    await until(async () => !(await listed("drain-end-a")), 3000);

    // Quiet from here on: no heartbeat, no register, nothing in the audit trail.
    const registers = w.count("register");
    const heartbeats = w.count("heartbeat");
    const audited = (await registeredEntries("drain-end-a")).length;
    await new Promise((r) => setTimeout(r, QUIET_WINDOW_MS));
    expect(w.count("register")).toBe(registers);
    expect(w.count("heartbeat")).toBe(heartbeats);
    expect(registers).toBe(1);
    expect((await registeredEntries("drain-end-a")).length).toBe(audited);
    expect(w.logger.lines.filter((l) => l.includes("drained by the operator"))).toHaveLength(1);

    // A restart under the same clientId is still drained (the drain outlives its deadline by
    // days): it ends at once, with the same line, rather than die and re-register in a loop.
    const again = await countedWorker("drain-end-a");
    await until(() => settled(again.worker), 5000);
    expect(again.logger.lines.filter((l) => !l.startsWith("info "))).toEqual([line("drain-end-a")]);
    await new Promise((r) => setTimeout(r, QUIET_WINDOW_MS));
    expect(again.count("register")).toBe(1);

    // Under another clientId, a restart serves.
    const served = await countedWorker("drain-end-a2");
    expect((await untilServed(`${fleet.pb.url}/counter/de2`)).status).toBe(200);
    expect(served.worker.instances().map((i) => i.id)).toEqual(["de2"]);
    await new Promise((r) => setTimeout(r, QUIET_WINDOW_MS));
    expect(await settled(served.worker)).toBe(false);
    expect(await listed("drain-end-a2")).toBe(true);
    await served.stop();
  });

  it("lifted before it passes (undrain), or a cordon: the worker keeps serving", async () => {
    const w = await countedWorker("drain-end-b");
    // 5 s: the worker ends a timed drain 1 s + 5 % before its deadline (drainEndsAt), and the undrain
    // must reach it before then.
    expect(await op("/registry/drain", { clientId: "drain-end-b", deadline: 5 })).toEqual({
      status: 200,
      body: { drained: true },
    });
    await until(() => w.worker.draining, 5000);
    expect(await op("/registry/undrain", { clientId: "drain-end-b" })).toEqual({
      status: 200,
      body: { revoked: true },
    });
    await until(() => !w.worker.draining, 5000);
    expect(await op("/registry/drain", { clientId: "drain-end-b", deadline: null })).toEqual({
      status: 200,
      body: { drained: true },
    });
    await until(() => w.worker.draining, 5000);
    // Past the timed drain's deadline and some heartbeats: still registered.
    await new Promise((r) => setTimeout(r, 5000 + QUIET_WINDOW_MS));
    expect(await settled(w.worker)).toBe(false);
    expect(w.worker.sessionId).toMatch(/^[0-9a-f]{32}$/);
    expect(w.count("register")).toBe(1);
    expect(await listed("drain-end-b")).toBe(true);
    expect(w.logger.lines.filter((l) => l.includes("drained by the operator"))).toEqual([]);
    await w.stop();
  });

  it("makes a process under handleShutdownSignals exit 0 after the line", async () => {
    const child = await spawnWorkerProcess("shutdown-worker-main.ts", {
      PINBOARD_URL: fleet.pb.url,
      CREDENTIAL: await fleet.pb.workerCredential(),
      CLIENT_ID: "drain-end-c",
      LOG_WARNINGS: "1",
    });
    const exited = new Promise<number | null>((resolve) => child.process.once("exit", (code) => resolve(code)));
    expect(await op("/registry/drain", { clientId: "drain-end-c", deadline: 1 })).toEqual({
      status: 200,
      body: { drained: true },
    });
    expect(await exited).toBe(0);
    expect(child.output()).toContain(`${line("drain-end-c").replace("warn [pinned] ", "")}\n`);
    await until(async () => !(await listed("drain-end-c")), 3000);
  });
});
