import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { describe, expect, it } from "vitest";
import { type ChallengeMode, type ChallengeServer, startChallengeServer } from "../support/challenge-server.ts";
import { until } from "../support/local-worker.ts";
import type { TestPinboard } from "../support/pinboard-app.ts";
import type { TestRedis } from "../support/redis.ts";
import { answerElsewhere, heartbeatBody, registerBody, registerOk } from "../support/registration.ts";
import { useRegistryFixture } from "../support/registry-fixture.ts";

/**
 * POST /registry/heartbeat: "A probe that is unreachable, non-2xx, or body-less still renews the
 * lease and sets degradedSince on the record. A passing probe clears it." The worker contract's
 * table: "Non-2xx, timeout, connection error, body not received → heartbeat marks the worker
 * degraded", and "Redirects are never followed".
 *
 * For each failure kind, against a real challenge-answering worker on loopback: the heartbeat is
 * 200 with `degraded: true`, GET /registry/workers shows the record renewed with `degradedSince`
 * set at the first failing heartbeat and kept by the next, and a passing probe clears it. A failing
 * probe renews from the heartbeat's arrival (expiry = arrival + lease, before the probe's end,
 * when degradedSince is stamped); a passing one from the probe's answer.
 */

const LEASE = 15_000;
// Long enough that a passing probe never times out on a loaded machine.
const VERIFY_TIMEOUT_MS = 1000;

let t: TestRedis, pb: TestPinboard, token: string, operator: string;
// Each test starts its own worker.
useRegistryFixture(
  { PINBOARD_VERIFY_TIMEOUT_MS: String(VERIFY_TIMEOUT_MS), PINBOARD_LEASE_TTL_MS: String(LEASE) },
  (f) =>
    ({
      t,
      pb,
      token,
      credentials: { operator },
    } = f),
  { worker: false, credentials: { operator: ["pinboard:operator"] } },
);

interface WorkerEntry {
  sessionId: string;
  clientId: string;
  advertiseUrl: string;
  namespaces: string[];
  hostname: string | null;
  envs: Record<string, string>;
  takeover: string | null;
  headroom: number;
  draining: boolean;
  degradedSince?: number;
  expiry: number;
}

async function entry(sessionId: string): Promise<WorkerEntry> {
  const res = await pb.call("GET", "/registry/workers", { token: operator });
  expect(res.status).toBe(200);
  const { workers } = (await res.json()) as { workers: WorkerEntry[] };
  const found = workers.find((w) => w.sessionId === sessionId);
  expect(found).toBeDefined();
  return found!;
}

/** What /registry/workers must show for a registered challenge-server worker, degradedSince aside. */
function expected(
  worker: { url: string },
  body: Record<string, unknown>,
  sessionId: string,
  headroom: number,
  expiry: number,
): WorkerEntry {
  return {
    sessionId,
    clientId: body.clientId as string,
    advertiseUrl: worker.url,
    namespaces: ["/threads"],
    // Single mode: no hostname, no takeover.
    hostname: null,
    envs: {},
    takeover: null,
    headroom,
    draining: false,
    expiry,
  };
}

/**
 * One worker through a whole cycle: registered while it answers, then `fail()` makes its probe
 * fail, two heartbeats (degraded, renewed; degradedSince set, then kept), `restore()`, one passing
 * heartbeat (cleared, renewed). `prepare` sees (and may change) each failing heartbeat's body.
 */
async function cycle(
  worker: ChallengeServer,
  fail: () => void | Promise<void>,
  restore: () => void | Promise<void>,
  prepare: (heartbeat: Record<string, unknown>) => void = () => {},
  /** How long a failing probe waits before it fails (a timeout's PINBOARD_VERIFY_TIMEOUT_MS). */
  probeWaitsMs = 0,
): Promise<void> {
  const body = registerBody(worker);
  const { sessionId } = await registerOk(pb, token, body);
  const registered = await entry(sessionId);
  expect(registered).toEqual(expected(worker, body, sessionId, 100, registered.expiry));
  // Redis' clock has moved past the register: a renewed expiry is later than the register's.
  await until(async () => (await t.redis.timeMs()) > registered.expiry - LEASE);

  await fail();
  const failing = (headroom: number) => {
    const hb = heartbeatBody(worker, sessionId, { headroom });
    prepare(hb);
    return pb.call("POST", "/registry/heartbeat", { token, body: hb });
  };

  const before1 = await t.redis.timeMs();
  let res = await failing(40);
  expect(res.status).toBe(200);
  expect(await res.json()).toEqual({ expiresInMs: LEASE, draining: false, degraded: true });
  const degraded = await entry(sessionId);
  expect(degraded).toEqual({
    ...expected(worker, body, sessionId, 40, degraded.expiry),
    degradedSince: expect.any(Number),
  });
  // Redis' clock (before1, degradedSince) and Pinboard's (the arrival) are one machine's: 1 ms of rounding.
  expect(degraded.expiry).toBeGreaterThanOrEqual(before1 + LEASE - 1);
  expect(degraded.expiry).toBeGreaterThan(registered.expiry);
  expect(degraded.degradedSince).toBeGreaterThanOrEqual(before1);
  // The lease runs from the arrival: the probe's wait is not credited.
  expect(degraded.degradedSince! - (degraded.expiry - LEASE)).toBeGreaterThanOrEqual(probeWaitsMs - 1);

  await until(async () => (await t.redis.timeMs()) > degraded.expiry - LEASE);
  const before2 = await t.redis.timeMs();
  res = await failing(30);
  expect(res.status).toBe(200);
  expect(await res.json()).toEqual({ expiresInMs: LEASE, draining: false, degraded: true });
  const still = await entry(sessionId);
  // Renewed again; degraded since the first failing heartbeat, not the latest.
  expect(still).toEqual({
    ...expected(worker, body, sessionId, 30, still.expiry),
    degradedSince: degraded.degradedSince,
  });
  expect(still.expiry).toBeGreaterThanOrEqual(before2 + LEASE - 1);
  expect(still.expiry).toBeGreaterThan(degraded.expiry);

  await restore();
  await until(async () => (await t.redis.timeMs()) > still.expiry - LEASE);
  const before3 = await t.redis.timeMs();
  res = await pb.call("POST", "/registry/heartbeat", {
    token,
    body: heartbeatBody(worker, sessionId, { headroom: 20 }),
  });
  expect(res.status).toBe(200);
  expect(await res.json()).toEqual({ expiresInMs: LEASE, draining: false });
  const cleared = await entry(sessionId);
  expect(cleared).toEqual(expected(worker, body, sessionId, 20, cleared.expiry));
  expect(cleared.expiry).toBeGreaterThanOrEqual(before3 + LEASE);
}

describe("a failing heartbeat probe renews the lease and marks the worker degraded; a passing one clears it", () => {
  const modes: Array<[string, ChallengeMode]> = [
    ["a timeout (no answer within PINBOARD_VERIFY_TIMEOUT_MS)", "timeout"],
    ["a non-2xx answer (500)", "error500"],
    ["a 200 without a body", "empty"],
  ];
  for (const [name, mode] of modes) {
    it(name, async () => {
      const worker = await startChallengeServer();
      try {
        await cycle(
          worker,
          () => void (worker.mode = mode),
          () => void (worker.mode = "answer"),
          undefined,
          mode === "timeout" ? VERIFY_TIMEOUT_MS : 0,
        );
      } finally {
        await worker.close();
      }
    });
  }

  it("a non-2xx answer (404 unknown challenge: the worker does not know the heartbeat's challenge)", async () => {
    const worker = await startChallengeServer();
    try {
      const seen = () => worker.seen.filter((s) => s.url === "/_pinned/challenge?challenge=never-issued").length;
      await cycle(
        worker,
        () => {},
        () => {},
        (hb) => void (hb.challenge = "never-issued"),
      );
      expect(seen()).toBe(2);
    } finally {
      await worker.close();
    }
  });

  it("a redirect (302): never followed, even to a server that would answer the challenge", async () => {
    const worker = await startChallengeServer();
    const elsewhere = await startChallengeServer(worker.secret);
    try {
      worker.redirectTo = elsewhere.url;
      const redirected = () => worker.seen.filter((s) => s.url.startsWith("/_pinned/challenge?challenge=h-")).length;
      const before = redirected();
      await cycle(
        worker,
        () => void (worker.mode = "redirect"),
        () => void (worker.mode = "answer"),
        // The redirect target knows the heartbeat's challenge and would answer it correctly.
        (hb) => answerElsewhere(elsewhere, hb),
      );
      // Two redirecting heartbeats and the passing one reached the worker; nothing reached the target.
      expect(redirected() - before).toBe(3);
      expect(elsewhere.seen).toEqual([]);
    } finally {
      await worker.close();
      await elsewhere.close();
    }
  });

  it("a connection error (the advertise URL's server is closed: connection refused)", async () => {
    const worker = await startChallengeServer();
    const port = Number(new URL(worker.url).port);
    let reopened: Server | undefined;
    try {
      await cycle(
        worker,
        () => worker.close(),
        async () => {
          // The worker comes back on the same address and answers its challenges again.
          reopened = createServer((req, res) => {
            const url = new URL(req.url ?? "/", "http://x");
            const value = worker.challenges.get(url.searchParams.get("challenge") ?? "");
            if (
              url.pathname !== "/_pinned/challenge" ||
              req.headers["pinboard-proxy-secret"] !== worker.secret ||
              value === undefined
            ) {
              res
                .writeHead(404, { "content-type": "application/json" })
                .end(JSON.stringify({ detail: "unknown challenge" }));
              return;
            }
            res.writeHead(200, { "content-type": "application/json" }).end(JSON.stringify({ value }));
          });
          await new Promise<void>((resolve) => reopened!.listen(port, "127.0.0.1", resolve));
          expect((reopened.address() as AddressInfo).port).toBe(port);
        },
      );
    } finally {
      await worker.close();
      if (reopened) {
        reopened.closeAllConnections();
        await new Promise<void>((resolve) => reopened!.close(() => resolve()));
      }
    }
  });
});
