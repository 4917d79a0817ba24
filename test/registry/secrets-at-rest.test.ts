import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { isSealed } from "../../src/auth/worker-secrets.ts";
import { Keys } from "../../src/redis/keys.ts";
import { Echo } from "../support/echo-instance.ts";
import { type Fleet, type FleetWorker, startFleet } from "../support/fleet.ts";
import { everyStoredString } from "../support/keyspace.ts";
import { type PinboardProcess, startPinboardProcess } from "../support/pinboard-process.ts";

/**
 * Worker secrets at rest (DESIGN.md invariant 7): after real registrations with the Node entry,
 * heartbeats, forwards and operator stats, no Redis value holds a worker's secret; a sealed
 * secret moved into another record, or read by a node with another key, is refused (500 on the
 * forward, 409 reregister on the heartbeat, unreachable in stats), logged, and never crashes a node.
 *
 *   alpha  serves /alpha      beta  serves /beta
 */

const keys = new Keys("pinboard:", 16);
let fleet: Fleet;
let alpha: FleetWorker;
let beta: FleetWorker;
/** A second Node entry on the same Redis, sealing under another key. */
let other: PinboardProcess;

beforeAll(async () => {
  fleet = await startFleet({ workers: 0, env: { PINBOARD_LEASE_TTL_MS: "3000" } });
  alpha = await fleet.addWorker({ clientId: "alpha", namespaces: { "/alpha": Echo } });
  beta = await fleet.addWorker({ clientId: "beta", namespaces: { "/beta": Echo } });
  await fleet.skipColdStart();
  other = await startPinboardProcess({
    redis: fleet.t,
    env: { PINBOARD_LEASE_TTL_MS: "3000", PINBOARD_SECRETS_KEY: "another-key-another-fleet-0123456789" },
  });
}, 60_000);
afterAll(async () => {
  await other?.stop();
  await fleet?.close();
});

const storedSecret = async (sessionId: string): Promise<string> =>
  JSON.parse((await fleet.t.redis.hget(keys.sessions, sessionId))!).secret as string;

/** Rewrites a record's stored secret everywhere it is kept: fleet-wide and in every bucket's mirror. */
async function storeSecret(sessionId: string, secret: string): Promise<void> {
  const client = fleet.t.redis.client;
  const rewrite = async (key: string) => {
    const json = await client.hget(key, sessionId);
    if (json !== null) await client.hset(key, sessionId, JSON.stringify({ ...JSON.parse(json), secret }));
  };
  await rewrite(keys.sessions);
  for (const bucket of keys.allBuckets()) await rewrite(keys.workers(bucket));
}

/** Waits for the worker's next heartbeat (one a second with a 3 s lease): its record's revision moves. */
async function heartbeatOf(w: FleetWorker): Promise<void> {
  const revision = async () => JSON.parse((await fleet.t.redis.hget(keys.sessions, w.worker.sessionId!))!).rev;
  const from = await revision();
  const deadline = Date.now() + 10_000;
  while ((await revision()) === from) {
    if (Date.now() > deadline) throw new Error("no heartbeat within 10 s");
    await new Promise((r) => setTimeout(r, 100));
  }
}

async function expectError(res: Response, status: number, body: Record<string, unknown>): Promise<void> {
  expect({ status: res.status, body: await res.json() }).toEqual({ status, body });
}

const forward = (pb: PinboardProcess, path: string) => fetch(`${pb.url}${path}`);

describe("worker secrets at rest", () => {
  it("no Redis value holds a worker's secret after register, forwards, heartbeats and stats", async () => {
    for (const path of ["/alpha/one", "/beta/two"]) {
      const res = await forward(fleet.pb, path);
      expect(res.status).toBe(200);
      expect(((await res.json()) as { attestation: { aud: string } }).attestation.aud).toMatch(/^\S+$/);
    }
    await heartbeatOf(alpha); // which rewrites the record
    const stats = await fetch(`${fleet.pb.url}/registry/stats`, {
      headers: { authorization: `Bearer ${await fleet.pb.operatorCredential()}` },
    });
    const listed = ((await stats.json()) as { workers: Array<{ clientId: string; stats?: unknown }> }).workers;
    expect(listed.map((w) => [w.clientId, w.stats !== undefined]).sort()).toEqual([
      ["alpha", true],
      ["beta", true],
    ]);

    for (const { worker } of [alpha, beta]) expect(isSealed(await storedSecret(worker.sessionId!))).toBe(true);
    const stored = await everyStoredString(fleet.t);
    expect(stored.length).toBeGreaterThan(50);
    for (const { worker } of [alpha, beta]) {
      expect(worker.secret.length).toBeGreaterThanOrEqual(16);
      expect(stored.filter((value) => value.includes(worker.secret))).toEqual([]);
    }
  });

  it("refuses a sealed secret copied into another session's record: 500 on the forward, logged, nothing sent", async () => {
    const betaSession = beta.worker.sessionId!;
    const betaSealed = await storedSecret(betaSession);
    await storeSecret(betaSession, await storedSecret(alpha.worker.sessionId!));
    try {
      const before = fleet.pb.output().length;
      await expectError(await forward(fleet.pb, "/beta/moved"), 500, { error: "internal error" });
      const logged = fleet.pb.output().slice(before);
      expect(logged).toContain('"msg":"worker secret unreadable: sealed under another key');
      expect(logged).toContain(`"sessionId":"${betaSession}"`);
      expect(logged).not.toContain(beta.worker.secret);
      expect(logged).not.toContain(alpha.worker.secret);
      expect(beta.worker.instances().map((i) => i.id)).not.toContain("moved");
      // The node goes on serving.
      expect((await forward(fleet.pb, "/alpha/still")).status).toBe(200);
    } finally {
      await storeSecret(betaSession, betaSealed);
    }
    expect((await forward(fleet.pb, "/beta/back")).status).toBe(200);
  });

  it("a node with another key: 500 on the forward, unreachable in stats, 409 reregister on the heartbeat", async () => {
    const before = other.output().length;
    await expectError(await forward(other, "/alpha/elsewhere"), 500, { error: "internal error" });
    expect(other.output().slice(before)).toContain(`"sessionId":"${alpha.worker.sessionId}"`);

    const stats = await fetch(`${other.url}/registry/stats`, {
      headers: { authorization: `Bearer ${await other.operatorCredential()}` },
    });
    expect(stats.status).toBe(200);
    const listed = ((await stats.json()) as { workers: Array<{ clientId: string; error?: string }> }).workers;
    expect(listed.map((w) => [w.clientId, w.error]).sort()).toEqual([
      ["alpha", "unreachable"],
      ["beta", "unreachable"],
    ]);

    const heartbeat = await fetch(`${other.url}/registry/heartbeat`, {
      method: "POST",
      headers: { authorization: `Bearer ${await other.workerCredential()}`, "content-type": "application/json" },
      body: JSON.stringify({
        sessionId: alpha.worker.sessionId,
        headroom: 10,
        draining: false,
        challenge: "c",
        challengeValue: "v",
      }),
    });
    await expectError(heartbeat, 409, { error: "unknown session", reregister: true });
    expect(other.output()).not.toContain(alpha.worker.secret);
    // Neither node fell over; the first still forwards with its key.
    expect((await fetch(`${other.url}/healthz`)).status).toBe(200);
    expect((await forward(fleet.pb, "/alpha/home")).status).toBe(200);
  });

  it("reads a record written before sealing (legacy plaintext), and seals it at the worker's next heartbeat", async () => {
    const session = alpha.worker.sessionId!;
    await storeSecret(session, alpha.worker.secret);
    // The worker verifies the attestation: a 200 means it was signed with its secret.
    expect((await forward(fleet.pb, "/alpha/legacy")).status).toBe(200);
    await heartbeatOf(alpha);
    expect(isSealed(await storedSecret(session))).toBe(true);
    // The bucket mirrors follow the heartbeat's fan-out.
    const deadline = Date.now() + 5000;
    let holding = (await everyStoredString(fleet.t)).filter((value) => value.includes(alpha.worker.secret));
    while (holding.length > 0 && Date.now() < deadline) {
      await new Promise((r) => setTimeout(r, 100));
      holding = (await everyStoredString(fleet.t)).filter((value) => value.includes(alpha.worker.secret));
    }
    expect(holding).toEqual([]);
    expect((await forward(fleet.pb, "/alpha/resealed")).status).toBe(200);
  });
});
