import { spawn } from "node:child_process";
import { fileURLToPath } from "node:url";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createWorker, listenPinned } from "../../src/pinned/index.ts";
import { Keys, SINGLE_ENV } from "../../src/redis/keys.ts";
import { freePort } from "../../src/runtime/node/process/free-port.ts";
import { type Fleet, type FleetWorker, startCounterFleet } from "../support/fleet.ts";
import { Held } from "../support/held-instances.ts";
import { memoryLogger, until } from "../support/local-worker.ts";
import { untilServed } from "../support/pinboard-calls.ts";
import { Counter } from "../support/sample-instances.ts";

/** Start, credential trouble and graceful shutdown against the real Pinboard Node entry. */

/**
 * Long enough that the 403 test below keeps its session with seconds to spare: see there.
 */
const LEASE_MS = 6000;
let fleet: Fleet;
beforeAll(async () => {
  fleet = await startCounterFleet(LEASE_MS);
});
afterAll(() => fleet.close());

const sessions = new Keys("pinboard:", 16).sessions;

describe("start()", () => {
  it("refuses at construction a secret Pinboard would refuse at register (under 16 characters)", () => {
    const options = {
      pinboardUrl: fleet.pb.url,
      credential: "unused",
      namespaces: { "/counter": Counter },
      logger: memoryLogger(),
    };
    expect(() => createWorker({ ...options, secret: "x".repeat(15) })).toThrow(
      "createWorker: secret must have at least 16 characters",
    );
    expect(createWorker({ ...options, secret: "x".repeat(16) }).secret).toBe("x".repeat(16));
  });

  it("rejects at once when the credential does not cover the namespaces", async () => {
    const worker = createWorker({
      pinboardUrl: fleet.pb.url,
      credential: await fleet.pb.workerCredential({ namespaces: ["/other"] }),
      namespaces: { "/counter": Counter },
      logger: memoryLogger(),
    });
    const listening = await worker.listen();
    try {
      await expect(worker.start()).rejects.toThrow(/403 namespace not allowed/);
      expect(worker.sessionId).toBeNull();
    } finally {
      await worker.stop();
      await listening.close();
    }
  });

  it("retries a register whose probe fails until the advertise URL answers", async () => {
    const logger = memoryLogger();
    // Nothing listens at the advertise URL yet: Pinboard answers 400 registration probe failed.
    const port = await freePort();
    const worker = createWorker({
      pinboardUrl: fleet.pb.url,
      credential: await fleet.pb.workerCredential(),
      advertiseUrl: `http://127.0.0.1:${port}`,
      namespaces: { "/counter": Counter },
      logger,
    });
    const started = worker.start();
    await until(() => logger.lines.some((l) => l.includes("registration probe failed")), 10_000);
    const listening = await listenPinned(worker.app.fetch, { port });
    try {
      await started;
      expect(worker.sessionId).toMatch(/\S/);
    } finally {
      await worker.stop();
      await listening.close();
    }
  });
});

describe("a heartbeat answered 403", () => {
  it("is retried with the same session until the credential is good again", async () => {
    const good = await fleet.pb.workerCredential();
    const otherAccount = await fleet.pb.workerCredential({}, { account: "someone-else" });
    let credential = good;
    const logger = memoryLogger();
    // The session must outlive the 403s: from the last renewal R it lives until R + LEASE_MS (6 s).
    // The lease turns unhealthy at R + 2.5 s (heartbeats come every LEASE_MS / 3 = 2 s), the
    // credential is good again right after, and the next heartbeat follows within one interval
    // (the retry backoff is capped by it): renewed by R + 4.5 s, 1.5 s before the session would end.
    const worker = createWorker({
      pinboardUrl: fleet.pb.url,
      credential: () => credential,
      namespaces: { "/counter": Counter },
      logger,
      leaseUnhealthyAfterMs: 2500,
    });
    const listening = await worker.listen();
    try {
      await worker.start();
      const sessionId = worker.sessionId;
      credential = otherAccount;
      await until(
        () => logger.lines.some((l) => l.includes("heartbeat failed") && l.includes("heartbeat: 403 forbidden")),
        10_000,
      );
      await until(() => worker.stats().leaseHealthy === false, 10_000);
      expect(worker.sessionId).toBe(sessionId);
      credential = good;
      await until(() => worker.stats().leaseHealthy === true, 10_000);
      expect(worker.sessionId).toBe(sessionId);
      expect(worker.stats().reregistrations).toBe(0);
    } finally {
      await worker.stop();
      await listening.close();
    }
  });
});

describe("stop()", () => {
  it("gives up on deregister after three tries when Pinboard cannot be reached", async () => {
    const calls: string[] = [];
    let down = false;
    const logger = memoryLogger();
    const worker = createWorker({
      pinboardUrl: fleet.pb.url,
      credential: await fleet.pb.workerCredential(),
      namespaces: { "/counter": Counter },
      logger,
      fetch: (input, init) => {
        calls.push(new URL(String(input)).pathname);
        return down ? Promise.reject(new TypeError("fetch failed: partitioned")) : fetch(input, init);
      },
    });
    const listening = await worker.listen();
    try {
      await worker.start();
      down = true;
      calls.length = 0;
      await worker.stop();
      expect(calls.filter((p) => p === "/registry/deregister")).toHaveLength(3);
      expect(logger.lines.some((l) => l.includes("deregister: gave up after 3 tries"))).toBe(true);
      expect(worker.sessionId).toBeNull();
    } finally {
      await listening.close();
    }
  });
});

describe("SIGTERM (handleShutdownSignals)", () => {
  it("drains, refuses new requests while the one in flight finishes, releases its placements, deregisters and exits 0", async () => {
    // A worker process with /held, whose requests stay in flight until the test opens their
    // gate (test/support/held-instances.ts), here with a line on the process's stdin.
    const child = spawn(process.execPath, ["--import", "tsx", "test/support/shutdown-worker-main.ts"], {
      cwd: fileURLToPath(new URL("../../", import.meta.url)),
      env: {
        PATH: process.env.PATH ?? "",
        PINBOARD_URL: fleet.pb.url,
        CREDENTIAL: await fleet.pb.workerCredential(),
        // Far longer than the test: shutdown must wait for the request in flight, not give up on it.
        GRACE_MS: "60000",
      },
      stdio: ["pipe", "pipe", "pipe"],
    });
    let out = "";
    child.stdout.on("data", (d: Buffer) => (out += d.toString()));
    child.stderr.on("data", (d: Buffer) => (out += d.toString()));
    const exited = new Promise<number | null>((resolve) => child.once("exit", (code) => resolve(code)));
    const operator = await fleet.pb.operatorCredential();
    const listed = async (sessionId: string) => {
      const res = await fetch(`${fleet.pb.url}/registry/workers`, { headers: { authorization: `Bearer ${operator}` } });
      const { workers } = (await res.json()) as { workers: Array<{ sessionId: string; draining: boolean }> };
      return workers.find((w) => w.sessionId === sessionId);
    };
    const row = async (id: string) => {
      const keys = new Keys("pinboard:", 16);
      return fleet.t.redis.client.hget(keys.placements(await keys.bucketOf(id), SINGLE_ENV, "/held"), id);
    };
    let other: FleetWorker | undefined;
    try {
      const line = await until(() => /ready (\{.*\})/.exec(out), 20_000);
      const { sessionId } = JSON.parse(line[1]!) as { sessionId: string };
      expect(await fleet.t.redis.client.hget(sessions, sessionId)).not.toBeNull();
      // A resident instance with a request in flight: shutdown waits for it. /held is served by
      // this worker alone. And an idle one, released at once.
      const status = async () => (await (await untilServed(`${fleet.pb.url}/held/sig`)).json()) as { waiting: number };
      expect(await status()).toEqual({ waiting: 0, arrivals: 0, open: false });
      expect((await untilServed(`${fleet.pb.url}/held/idle`)).status).toBe(200);
      expect(await row("idle")).toMatch(new RegExp(`^${sessionId}\n`));
      const held = fetch(`${fleet.pb.url}/held/sig/hold`, { method: "POST" });
      await until(async () => (await status()).waiting === 1, 10_000);
      // Another worker serving /held, from now on (the ids above are placed on the child).
      other = await fleet.addWorker({ namespaces: { "/held": Held } });

      child.kill("SIGTERM");
      // The worker drains (Pinboard sees its flag) and then waits: the request is still in flight.
      await until(async () => (await listed(sessionId))?.draining === true, 10_000);
      // The idle instance is handed over at once: its placement released, not left to eviction.
      await until(async () => (await row("idle")) === null, 5000);
      expect(child.exitCode).toBeNull();

      // A new request to the instance winding down is refused in band: Pinboard releases the
      // placement and places it on the other worker serving /held, at once.
      const refused = await fetch(`${fleet.pb.url}/held/sig`);
      expect({ status: refused.status, body: await refused.json() }).toEqual({
        status: 200,
        body: { waiting: 0, arrivals: 0, open: false },
      });
      expect(other!.worker.instances().map((i) => i.id)).toEqual(["sig"]);
      expect(await row("sig")).toMatch(new RegExp(`^${other!.worker.sessionId}\n`));

      // The request in flight finishes, then the worker deregisters and exits.
      child.stdin.write("open /held/sig\n");
      const finished = await held;
      expect(finished.status).toBe(200);
      expect(await finished.json()).toEqual({ released: true });
      expect(await exited).toBe(0);
      expect(out).toContain("deregistered");
      expect(await fleet.t.redis.client.hget(sessions, sessionId)).toBeNull();
      // Its release quoted its own epoch: the row the other worker holds now is left alone.
      expect(await row("sig")).toMatch(new RegExp(`^${other!.worker.sessionId}\n`));
    } finally {
      child.kill("SIGKILL");
      await other?.stop();
    }
  });
});
