import { describe, expect, it } from "vitest";
import { type ChallengeServer, startChallengeServer } from "../support/challenge-server.ts";
import type { TestPinboard } from "../support/pinboard-app.ts";
import { endColdStart, type TestRedis } from "../support/redis.ts";
import { registerBody, registerOk } from "../support/registration.ts";
import { useRegistryFixture } from "../support/registry-fixture.ts";
import { getRow, putRow } from "../support/rows.ts";

/**
 * Register-time reclaim through prevSessionId hands placement rows over at their epoch, so only
 * the account (and client) that registered the previous session may do it: whether that session
 * is live, deregistered, or pruned, and whether Pinboard knows the session at all.
 */

const SESSIONS = "pinboard:{global}:sessions";
const EXPIRIES = "pinboard:{global}:session-expiries";
const OWNERS = "pinboard:{global}:session-owners";
const CHECKS = "pinboard:{global}:session-owner-checks";
const LEASE_MS = 15_000;

let t: TestRedis, pb: TestPinboard, workerA: ChallengeServer, acme: string, globex: string;
useRegistryFixture(
  {},
  (f) =>
    ({
      t,
      pb,
      worker: workerA,
      token: acme,
      credentials: { globex },
    } = f),
  {
    token: { sub: "a", account: "acme" },
    credentials: { globex: ["pinboard:worker", {}, { sub: "b", account: "globex" }] },
  },
);

let n = 0;
const fresh = (what: string) => `${what}-${++n}`;

async function deregister(token: string, sessionId: string): Promise<void> {
  const res = await pb.call("POST", "/registry/deregister", { token, body: { sessionId } });
  expect(res.status).toBe(200);
  expect(await res.json()).toEqual({});
}

/** Ages a session's record past expiry + lease, so that the next register prunes it. */
async function expireLongAgo(sessionId: string): Promise<void> {
  const record = JSON.parse((await t.redis.hget(SESSIONS, sessionId))!) as { expiry: number };
  const expiry = record.expiry - 10 * LEASE_MS;
  await t.redis.client.hset(SESSIONS, sessionId, JSON.stringify({ ...record, expiry }));
  await t.redis.client.zadd(EXPIRIES, expiry, sessionId);
}

/** A register of `token` offering `ids` through prevSessionId; answers the new session and the duplicates. */
async function reclaim(
  token: string,
  prevSessionId: string,
  ns: string,
  ids: string[],
  overrides: Record<string, unknown> = {},
) {
  return registerOk(
    pb,
    token,
    registerBody(workerA, { namespaces: [ns], prevSessionId, instances: { [ns]: ids }, ...overrides }),
  );
}

/** A row as putRow writes it: owner and epoch, no fence, hostname or tag. */
const plainRow = (sessionId: string, epoch: string) => ({ sessionId, epoch, expiry: "", hostname: "", tag: "" });

describe("reclaim through prevSessionId is only for the same account", () => {
  it("another account cannot take over a deregistered session's placement: the id comes back in duplicates and its next forward carries a new epoch", async () => {
    // Account A's session serves /shared/victim-1 through a real placement.
    await endColdStart(t);
    const a = await registerOk(pb, acme, registerBody(workerA, { clientId: "client-a", namespaces: ["/shared"] }));
    const first = await pb.call("GET", "/shared/victim-1");
    expect(first.status).toBe(404); // the challenge server's answer to a forward: it reached A
    expect(await first.json()).toEqual({ detail: "not found" });
    const forwardToA = workerA.seen.at(-1)!;
    expect(forwardToA.url).toBe("/shared/victim-1");
    const row = (await getRow(t, "/shared", "victim-1"))!;
    expect(row.sessionId).toBe(a.sessionId);
    expect(forwardToA.headers["pinboard-epoch"]).toBe(row.epoch);

    await deregister(acme, a.sessionId);

    // Account B, its own worker, claims A's session as its previous one.
    const workerB = await startChallengeServer("worker-b-secret-0123456789");
    try {
      const b = await registerOk(
        pb,
        globex,
        registerBody(workerB, {
          clientId: "client-b",
          namespaces: ["/shared"],
          prevSessionId: a.sessionId,
          instances: { "/shared": ["victim-1"] },
        }),
      );
      expect(b.duplicates).toEqual([{ ns: "/shared", id: "victim-1" }]);
      expect(await getRow(t, "/shared", "victim-1")).toEqual(row);

      // The next request re-places the id at B, at a new epoch: A's epoch fences B out.
      const next = await pb.call("GET", "/shared/victim-1");
      expect(next.status).toBe(404);
      expect(await next.json()).toEqual({ detail: "not found" });
      const forwardToB = workerB.seen.at(-1)!;
      expect(forwardToB.url).toBe("/shared/victim-1");
      const moved = (await getRow(t, "/shared", "victim-1"))!;
      expect(moved.sessionId).toBe(b.sessionId);
      expect(BigInt(moved.epoch!)).toBeGreaterThan(BigInt(row.epoch!));
      expect(forwardToB.headers["pinboard-epoch"]).toBe(moved.epoch);
    } finally {
      await workerB.close();
    }
  });

  it("another account that takes over a freed clientId still cannot reclaim that client's old session", async () => {
    const ns = "/shared";
    const id = fresh("freed-client");
    const a = await registerOk(pb, acme, registerBody(workerA, { clientId: "client-freed", namespaces: [ns] }));
    await putRow(t, ns, id, { sessionId: a.sessionId, epoch: "7" });
    await deregister(acme, a.sessionId);

    // The clientId is free once A's session has no record: account B registers it, same clientId.
    const b = await reclaim(globex, a.sessionId, ns, [id], { clientId: "client-freed" });
    expect(b.duplicates).toEqual([{ ns, id }]);
    expect(await getRow(t, ns, id)).toEqual({ sessionId: a.sessionId, epoch: "7", expiry: "", hostname: "", tag: "" });
  });

  it("another account cannot reclaim the rows of a session whose record was pruned", async () => {
    const a = await registerOk(pb, acme, registerBody(workerA, { clientId: fresh("pruned-a") }));
    await putRow(t, "/threads", "pruned-1", { sessionId: a.sessionId, epoch: "501" });
    await expireLongAgo(a.sessionId);

    const b = await reclaim(globex, a.sessionId, "/threads", ["pruned-1"], { clientId: fresh("pruned-b") });
    expect(await t.redis.hget(SESSIONS, a.sessionId)).toBeNull(); // this register pruned it first
    expect(b.duplicates).toEqual([{ ns: "/threads", id: "pruned-1" }]);
    expect(await getRow(t, "/threads", "pruned-1")).toEqual(plainRow(a.sessionId, "501"));
  });

  it("another account cannot reclaim through the prevSessionId of a live session", async () => {
    const a = await registerOk(pb, acme, registerBody(workerA, { clientId: fresh("live-a") }));
    await putRow(t, "/threads", "live-1", { sessionId: a.sessionId, epoch: "502" });
    const b = await reclaim(globex, a.sessionId, "/threads", ["live-1"], { clientId: fresh("live-b") });
    expect(b.duplicates).toEqual([{ ns: "/threads", id: "live-1" }]);
    expect(await getRow(t, "/threads", "live-1")).toEqual(plainRow(a.sessionId, "502"));
  });

  it("another client of the same account cannot reclaim a deregistered session's rows either", async () => {
    const a = await registerOk(pb, acme, registerBody(workerA, { clientId: fresh("client-x") }));
    await putRow(t, "/threads", "sibling-1", { sessionId: a.sessionId, epoch: "503" });
    await deregister(acme, a.sessionId);
    const other = await reclaim(acme, a.sessionId, "/threads", ["sibling-1"], { clientId: fresh("client-y") });
    expect(other.duplicates).toEqual([{ ns: "/threads", id: "sibling-1" }]);
    expect((await getRow(t, "/threads", "sibling-1"))!.sessionId).toBe(a.sessionId);
  });

  it("a prevSessionId Pinboard has no record and no owner of reclaims nothing", async () => {
    await putRow(t, "/threads", "ghost-1", { sessionId: "ghost-session", epoch: "504" });
    expect(await t.redis.client.hexists(OWNERS, "ghost-session")).toBe(0);
    const b = await reclaim(acme, "ghost-session", "/threads", ["ghost-1"], { clientId: fresh("ghost") });
    expect(b.duplicates).toEqual([{ ns: "/threads", id: "ghost-1" }]);
    expect((await getRow(t, "/threads", "ghost-1"))!.sessionId).toBe("ghost-session");
  });

  it("the same account and client still reclaims after deregistering and after its record was pruned, keeping the epoch", async () => {
    for (const gone of ["deregistered", "pruned"] as const) {
      const clientId = fresh(`same-${gone}`);
      const a = await registerOk(pb, acme, registerBody(workerA, { clientId }));
      await putRow(t, "/threads", `${gone}-mine`, { sessionId: a.sessionId, epoch: "505", tag: "ws:keep" });
      if (gone === "deregistered") await deregister(acme, a.sessionId);
      else await expireLongAgo(a.sessionId);
      const again = await reclaim(acme, a.sessionId, "/threads", [`${gone}-mine`], { clientId });
      expect(await t.redis.hget(SESSIONS, a.sessionId)).toBeNull();
      expect(again.duplicates, gone).toBeUndefined();
      expect(await getRow(t, "/threads", `${gone}-mine`)).toEqual({
        sessionId: again.sessionId,
        epoch: "505",
        expiry: "",
        hostname: "",
        tag: "ws:keep",
      });
    }
  });
});

describe("the owner memory behind it", () => {
  it("remembers each session's account and client, and forgets it a window after the record is gone", async () => {
    const clientId = fresh("forget");
    const gone = await registerOk(pb, acme, registerBody(workerA, { clientId }));
    const liveClient = fresh("stays");
    const live = await registerOk(pb, acme, registerBody(workerA, { clientId: liveClient }));
    // The account is remembered as its tag (auth/account-tags.ts), never as itself.
    const acmeTag = await pb.deps.accounts.tag("acme");
    expect(JSON.parse((await t.redis.hget(OWNERS, gone.sessionId))!)).toEqual({ a: acmeTag, c: clientId });
    const due = Number(await t.redis.client.zscore(CHECKS, gone.sessionId));
    const now = Number((await t.redis.client.time())[0]) * 1000;
    expect(due).toBeGreaterThan(now + 24 * 3600_000 - 60_000); // a window (24 h) from now
    await putRow(t, "/threads", "forget-1", { sessionId: gone.sessionId, epoch: "506" });
    await deregister(acme, gone.sessionId);

    // Both fall due. The next register looks at them: the live one is due again a window later;
    // the one without a record is marked, also due a window later.
    await t.redis.client.zadd(CHECKS, 1, gone.sessionId, 1, live.sessionId);
    await registerOk(pb, acme, registerBody(workerA, { clientId: fresh("tick") }));
    expect(JSON.parse((await t.redis.hget(OWNERS, gone.sessionId))!)).toEqual({ a: acmeTag, c: clientId, d: 1 });
    expect(JSON.parse((await t.redis.hget(OWNERS, live.sessionId))!)).toEqual({ a: acmeTag, c: liveClient });
    for (const sid of [gone.sessionId, live.sessionId])
      expect(Number(await t.redis.client.zscore(CHECKS, sid))).toBeGreaterThan(now);

    // Marked and due again: forgotten. A reclaim through it now returns duplicates.
    await t.redis.client.zadd(CHECKS, 1, gone.sessionId);
    await registerOk(pb, acme, registerBody(workerA, { clientId: fresh("tick") }));
    expect(await t.redis.hget(OWNERS, gone.sessionId)).toBeNull();
    expect(await t.redis.client.zscore(CHECKS, gone.sessionId)).toBeNull();
    const late = await reclaim(acme, gone.sessionId, "/threads", ["forget-1"], { clientId });
    expect(late.duplicates).toEqual([{ ns: "/threads", id: "forget-1" }]);
    expect((await getRow(t, "/threads", "forget-1"))!.sessionId).toBe(gone.sessionId);
    expect(await t.redis.hget(OWNERS, live.sessionId)).not.toBeNull();
  });

  it("keeps the memory and its schedule in step: an entry missing from the schedule is put back on it", async () => {
    const a = await registerOk(pb, acme, registerBody(workerA, { clientId: fresh("resync") }));
    await t.redis.client.zrem(CHECKS, a.sessionId);
    await registerOk(pb, acme, registerBody(workerA, { clientId: fresh("tick") }));
    expect(await t.redis.client.zscore(CHECKS, a.sessionId)).not.toBeNull();
    expect(await t.redis.client.hlen(OWNERS)).toBe(await t.redis.client.zcard(CHECKS));
  });
});
