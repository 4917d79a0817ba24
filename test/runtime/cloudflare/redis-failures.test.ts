import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { Keys, SINGLE_ENV } from "../../../src/redis/keys.ts";
import { type ChallengeServer, startChallengeServer } from "../../support/challenge-server.ts";
import { credential } from "../../support/pinboard-app.ts";
import { startTestRedis, type TestRedis } from "../../support/redis.ts";
import { heartbeatBody, registerBody } from "../../support/registration.ts";
import { startWorkersEntry, type WorkersEntry } from "../../support/workerd-entry.ts";

/**
 * The Workers entry in workerd when its REST endpoint fails: a rotated token (WRONGPASS) is 503
 * `redis unavailable, retry`, never a 500; no log line carries a command's arguments (the worker's
 * secret and account travel in the register's scripts); a register whose Redis work is larger than
 * one request may carry is split into requests under the endpoint's limit, and one that fails
 * after its fleet-wide write leaves nothing behind. The bridge refuses bodies over Upstash's
 * 1,000,000 bytes, as Upstash does.
 */

const SECRET = "w2-worker-secret-6f1d0c9a27";
const ACCOUNT = "w2-account-acme-4471";
const UNAVAILABLE = { error: "redis unavailable, retry" };

let t: TestRedis, wk: WorkersEntry, small: WorkersEntry, worker: ChallengeServer, token: string;

beforeAll(async () => {
  t = await startTestRedis();
  [wk, small, worker, token] = await Promise.all([
    startWorkersEntry({ redis: t, env: { PINBOARD_VERIFY_TIMEOUT_MS: "1000", PINBOARD_LOG_LEVEL: "warn" } }),
    // A bridge whose limit one register mirror (256 long namespaces) exceeds, on a fleet of its own.
    startWorkersEntry({
      redis: t,
      env: { PINBOARD_PREFIX: "small:", PINBOARD_LOG_LEVEL: "warn" },
      bridgeMaxBodyBytes: 64 * 1024,
    }),
    startChallengeServer(SECRET),
    credential("pinboard:worker", {}, { account: ACCOUNT }),
  ]);
});
afterAll(async () => {
  await Promise.all([wk?.stop(), small?.stop(), worker?.close()]);
  await t?.stop();
});

/** The parts of a registry answer the tests read (a refusal is `{error}`). */
interface RegistryAnswer {
  sessionId?: string;
  duplicates?: Array<{ id: string }>;
  error?: string;
}

async function post(
  entry: WorkersEntry,
  path: string,
  body: unknown,
): Promise<{ status: number; retryAfter: string | null; json: RegistryAnswer }> {
  const res = await fetch(`${entry.url}${path}`, {
    method: "POST",
    headers: { authorization: `Bearer ${token}`, "content-type": "application/json" },
    body: JSON.stringify(body),
  });
  return {
    status: res.status,
    retryAfter: res.headers.get("retry-after"),
    json: (await res.json()) as RegistryAnswer,
  };
}

/** The log lines written while `work` ran; at least one of them must mention `expected`. */
async function logsDuring(entry: WorkersEntry, expected: string, work: () => Promise<void>): Promise<string[]> {
  const before = entry.logs().length;
  await work();
  const deadline = Date.now() + 2000;
  let lines = entry.logs().slice(before);
  while (!lines.some((l) => l.includes(expected)) && Date.now() < deadline) {
    await new Promise((r) => setTimeout(r, 20));
    lines = entry.logs().slice(before);
  }
  expect(
    lines.some((l) => l.includes(expected)),
    `a log line mentioning ${expected}`,
  ).toBe(true);
  return lines;
}

function expectNoCommandEcho(lines: string[]): void {
  for (const line of lines) {
    expect(line).not.toContain(SECRET);
    expect(line).not.toContain(ACCOUNT);
    expect(line).not.toContain("command was");
  }
}

describe("a rotated REST token (WRONGPASS)", () => {
  it("answers a heartbeat 503 redis unavailable, retry with Retry-After: 1, and a register the same, logging no argument", async () => {
    const reg = await post(wk, "/registry/register", registerBody(worker));
    expect(reg.status).toBe(200);
    const sessionId = reg.json.sessionId as string;
    expect((await post(wk, "/registry/heartbeat", heartbeatBody(worker, sessionId))).status).toBe(200);

    wk.bridge.setToken("rotated-in-the-console");
    try {
      let lines = await logsDuring(wk, "redis unavailable", async () => {
        const hb = await post(wk, "/registry/heartbeat", heartbeatBody(worker, sessionId));
        expect(hb).toEqual({ status: 503, retryAfter: "1", json: UNAVAILABLE });
      });
      expectNoCommandEcho(lines);

      // The register's first script carries the record: the worker's secret and account.
      lines = await logsDuring(wk, "/registry/register", async () => {
        const again = await post(wk, "/registry/register", registerBody(worker));
        expect(again).toEqual({ status: 503, retryAfter: "1", json: UNAVAILABLE });
      });
      const logged = lines
        .map((l) => JSON.parse(l) as Record<string, unknown>)
        .find((l) => l.path === "/registry/register");
      expect(logged).toMatchObject({
        level: "warn",
        msg: "redis unavailable",
        error: "redis unavailable: WRONGPASS invalid or missing auth token",
      });
      expectNoCommandEcho(lines);
    } finally {
      wk.bridge.setToken(wk.token);
    }
    expect((await post(wk, "/registry/heartbeat", heartbeatBody(worker, sessionId))).status).toBe(200);
  });
});

describe("a register larger than one REST request", () => {
  it("succeeds when its reclaim (1.3 MB of ids) is split into requests under the endpoint's limit", async () => {
    const clientId = "split-client";
    const first = await post(wk, "/registry/register", registerBody(worker, { clientId }));
    expect(first.status).toBe(200);
    const keys = new Keys("pinboard:", 16);
    const ids = Array.from({ length: 30_000 }, (_, i) => `held-${String(i).padStart(6, "0")}-${"x".repeat(30)}`);
    const kept = ids.slice(0, 5);
    for (const id of kept)
      await t.redis.client.hset(
        keys.placements(keys.bucketOf(id), SINGLE_ENV, "/threads"),
        id,
        `${first.json.sessionId}\n77\n\n\n`,
      );

    const second = await post(
      wk,
      "/registry/register",
      registerBody(worker, { clientId, prevSessionId: first.json.sessionId, instances: { "/threads": ids } }),
    );
    expect(second.status).toBe(200);
    expect(second.json.duplicates).toHaveLength(ids.length - kept.length);
    expect(new Set(second.json.duplicates?.map((d) => d.id))).toEqual(new Set(ids.slice(kept.length)));
    for (const id of kept) {
      expect(await t.redis.hget(keys.placements(keys.bucketOf(id), SINGLE_ENV, "/threads"), id)).toBe(
        `${second.json.sessionId}\n77\n\n\n`,
      );
    }
  });

  it("fails cleanly when one of its scripts exceeds the endpoint's limit: 503, and nothing of it is left", async () => {
    const namespaces = Array.from({ length: 256 }, (_, i) => `/ns-${String(i).padStart(3, "0")}-${"n".repeat(96)}`);
    const clientId = "too-wide-client";
    const lines = await logsDuring(small, "register undone", async () => {
      const res = await post(small, "/registry/register", registerBody(worker, { clientId, namespaces }));
      expect(res).toEqual({ status: 503, retryAfter: "1", json: UNAVAILABLE });
    });
    expectNoCommandEcho(lines);

    expect(await t.redis.client.hlen("small:{global}:sessions")).toBe(0);
    expect(await t.redis.hget("small:{global}:clients", clientId)).toBeNull();
    for (let b = 0; b < 16; b++) {
      expect(await t.redis.client.hlen(`small:{${b}}:workers`)).toBe(0);
      expect(await t.redis.client.keys(`small:{${b}}:nsw:*`)).toEqual([]);
    }
    // The same worker with fewer namespaces registers there.
    const narrow = await post(
      small,
      "/registry/register",
      registerBody(worker, { clientId, namespaces: namespaces.slice(0, 3) }),
    );
    expect(narrow.status).toBe(200);
    expect(await t.redis.client.hlen("small:{global}:sessions")).toBe(1);
  });
});
