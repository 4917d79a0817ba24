import { describe, expect, it } from "vitest";
import { isAccountTag } from "../../src/auth/account-tags.ts";
import { Keys } from "../../src/redis/keys.ts";
import { register } from "../../src/registry/register.ts";
import { registerBody as registerSchema } from "../../src/registry/schemas.ts";
import type { ChallengeServer } from "../support/challenge-server.ts";
import { everyStoredString } from "../support/keyspace.ts";
import type { TestPinboard } from "../support/pinboard-app.ts";
import type { TestRedis } from "../support/redis.ts";
import { heartbeatBody, registerBody, registerOk } from "../support/registration.ts";
import { useRegistryFixture } from "../support/registry-fixture.ts";
import { getRow, putRow } from "../support/rows.ts";

/**
 * Accounts at rest (DESIGN.md invariant 7): after real registers, heartbeats, releases, tags and
 * deregisters, no Redis value holds an account, only its keyed tag; ownership still holds with the
 * contract's strings; entries written before tags (the account itself) still match their owner and
 * are rewritten to the tag; a node under another key cannot read a tag and says so without crashing.
 */

const ACCOUNT = "acct-Zq9-unique";
const keys = new Keys("pinboard:", 16);

let t: TestRedis, pb: TestPinboard, foreign: TestPinboard, worker: ChallengeServer, token: string, otherAccount: string;
useRegistryFixture(
  {},
  (f) =>
    ({
      t,
      pb,
      worker,
      token,
      pinboards: { foreign },
      credentials: { otherAccount },
    } = f),
  {
    token: { sub: "w-sub", account: ACCOUNT },
    credentials: { otherAccount: ["pinboard:worker", {}, { sub: "w-sub", account: "acct-other-Zq9" }] },
    // The same fleet (same prefix), another key: its tags, and its sealed secrets, differ.
    pinboards: { foreign: { PINBOARD_SECRETS_KEY: "another-key-another-fleet-0123456789" } },
  },
);

const post = (path: string, body: unknown, as = token, on = pb) =>
  pb === on ? pb.call("POST", path, { token: as, body }) : on.call("POST", path, { token: as, body });

async function answer(res: Response): Promise<{ status: number; body: unknown }> {
  return { status: res.status, body: await res.json() };
}

async function storedAccount(sessionId: string): Promise<string> {
  return JSON.parse((await t.redis.hget(keys.sessions, sessionId))!).account as string;
}

async function storedOwners(sessionId: string, clientId: string): Promise<{ owner: string; client: string }> {
  const owner = JSON.parse((await t.redis.hget(keys.sessionOwners, sessionId))!).a as string;
  const client = (await t.redis.hget(keys.clientOwners, clientId))!.split("\n")[0]!;
  return { owner, client };
}

async function accountsInRedis(): Promise<string[]> {
  return (await everyStoredString(t)).filter((value) => value.includes(ACCOUNT));
}

/**
 * A registration as Pinboard wrote it before account tags: the register route's own code with the
 * account itself where the tag now goes, so the record, the client owner and the remembered owner
 * hold the plaintext account, exactly as the previous version stored them.
 */
/** Re-registers `clientId` quoting `prev` and holding /threads `id`: the row is reclaimed (no duplicates). The new session. */
async function reclaims(clientId: string, prev: string, id: string): Promise<string> {
  const body = registerBody(worker, { clientId, prevSessionId: prev, instances: { "/threads": [id] } });
  const { sessionId, duplicates } = await registerOk(pb, token, body);
  expect(duplicates).toBeUndefined();
  expect((await getRow(t, "/threads", id))!.sessionId).toBe(sessionId);
  return sessionId;
}

async function legacyRegister(body: Record<string, unknown>): Promise<string> {
  const principal = await pb.deps.passport.authenticate(`Bearer ${token}`, "pinboard:worker");
  const written = await register(pb.deps, principal, principal.account, registerSchema.schema.parse(body));
  expect(await storedAccount(written.sessionId)).toBe(ACCOUNT);
  return written.sessionId;
}

describe("accounts at rest", () => {
  it("no Redis value holds the account after register, heartbeat, tag, release, deregister and re-register", async () => {
    const first = await registerOk(pb, token, registerBody(worker, { clientId: "at-rest" }));
    await putRow(t, "/threads", "r1", { sessionId: first.sessionId, epoch: "3" });
    await putRow(t, "/threads", "r2", { sessionId: first.sessionId, epoch: "3" });
    expect((await post("/registry/heartbeat", heartbeatBody(worker, first.sessionId))).status).toBe(200);
    expect(
      await answer(
        await post("/registry/tag", {
          sessionId: first.sessionId,
          namespace: "/threads",
          id: "r1",
          epoch: "3",
          tag: "t",
        }),
      ),
    ).toEqual({ status: 200, body: { tagged: true } });
    expect(
      await answer(
        await post("/registry/release", [{ sessionId: first.sessionId, namespace: "/threads", id: "r2", epoch: "3" }]),
      ),
    ).toEqual({ status: 200, body: { released: 1 } });
    const second = await registerOk(
      pb,
      token,
      registerBody(worker, { clientId: "at-rest", prevSessionId: first.sessionId }),
    );
    const gone = await registerOk(pb, token, registerBody(worker, { clientId: "leaves" }));
    expect(await answer(await post("/registry/deregister", { sessionId: gone.sessionId }))).toEqual({
      status: 200,
      body: {},
    });

    const tag = await storedAccount(second.sessionId);
    expect(isAccountTag(tag)).toBe(true);
    expect(await storedOwners(second.sessionId, "at-rest")).toEqual({ owner: tag, client: tag });
    expect(await accountsInRedis()).toEqual([]);
  });

  it("keeps the ownership rules: 409 client belongs to another account, 403 forbidden for every session route", async () => {
    const { sessionId } = await registerOk(pb, token, registerBody(worker, { clientId: "owned" }));
    await putRow(t, "/threads", "mine", { sessionId, epoch: "1" });
    const before = await t.snapshot();
    expect(
      await answer(await post("/registry/register", registerBody(worker, { clientId: "owned" }), otherAccount)),
    ).toEqual({
      status: 409,
      body: { error: "client belongs to another account" },
    });
    const row = { sessionId, namespace: "/threads", id: "mine", epoch: "1" };
    for (const [path, body] of [
      ["/registry/heartbeat", heartbeatBody(worker, sessionId)],
      ["/registry/release", [row]],
      ["/registry/tag", { ...row, tag: "x" }],
      ["/registry/deregister", { sessionId }],
    ] as const) {
      expect(await answer(await post(path, body, otherAccount))).toEqual({ status: 403, body: { error: "forbidden" } });
    }
    expect(await t.snapshot()).toEqual(before);
  });

  it("entries written before tags still match their owner, refuse other accounts and are rewritten to the tag", async () => {
    // A live legacy session: another account is still refused, its owner's heartbeat rewrites all three entries.
    const live = await legacyRegister(registerBody(worker, { clientId: "legacy-live" }));
    expect(await storedOwners(live, "legacy-live")).toEqual({ owner: ACCOUNT, client: ACCOUNT });
    expect(
      await answer(await post("/registry/register", registerBody(worker, { clientId: "legacy-live" }), otherAccount)),
    ).toEqual({
      status: 409,
      body: { error: "client belongs to another account" },
    });
    expect(await answer(await post("/registry/heartbeat", heartbeatBody(worker, live), otherAccount))).toEqual({
      status: 403,
      body: { error: "forbidden" },
    });
    expect((await post("/registry/heartbeat", heartbeatBody(worker, live))).status).toBe(200);
    const tag = await storedAccount(live);
    expect(isAccountTag(tag)).toBe(true);
    expect(await storedOwners(live, "legacy-live")).toEqual({ owner: tag, client: tag });

    // A legacy client owner: its own account re-registers the client (no 409) and reclaims its rows.
    const held = await legacyRegister(registerBody(worker, { clientId: "legacy-client" }));
    await putRow(t, "/threads", "kept", { sessionId: held, epoch: "9" });
    const again = await reclaims("legacy-client", held, "kept");
    expect(await storedOwners(again, "legacy-client")).toEqual({ owner: tag, client: tag });

    // Re-registered without prevSessionId: the replaced session's remembered owner gets the tag too.
    const plain = await legacyRegister(registerBody(worker, { clientId: "legacy-plain" }));
    const replacing = await registerOk(pb, token, registerBody(worker, { clientId: "legacy-plain" }));
    expect(await t.redis.hget(keys.sessions, plain)).toBeNull();
    expect(await storedOwners(replacing.sessionId, "legacy-plain")).toEqual({ owner: tag, client: tag });
    expect(JSON.parse((await t.redis.hget(keys.sessionOwners, plain))!)).toEqual({ a: tag, c: "legacy-plain" });

    // A legacy remembered owner (its record deregistered): the reclaim is allowed and the entry rewritten.
    const left = await legacyRegister(registerBody(worker, { clientId: "legacy-gone" }));
    await putRow(t, "/threads", "left", { sessionId: left, epoch: "4" });
    expect(
      (await post("/registry/release", [{ sessionId: left, namespace: "/threads", id: "none", epoch: "1" }])).status,
    ).toBe(200);
    expect(await answer(await post("/registry/deregister", { sessionId: left }))).toEqual({ status: 200, body: {} });
    expect(JSON.parse((await t.redis.hget(keys.sessionOwners, left))!).a).toBe(ACCOUNT);
    await reclaims("legacy-gone", left, "left");
    expect(JSON.parse((await t.redis.hget(keys.sessionOwners, left))!)).toEqual({
      a: tag,
      c: "legacy-gone",
    });

    expect(await accountsInRedis()).toEqual([]);
  });

  it("a node under another key cannot read a tag: 409 reregister on session routes, 409 on the client, and goes on serving", async () => {
    const { sessionId } = await registerOk(pb, token, registerBody(worker, { clientId: "keyed" }));
    const before = await t.snapshot();
    const unknown = { status: 409, body: { error: "unknown session", reregister: true } };
    const row = { sessionId, namespace: "/threads", id: "any", epoch: "1" };
    expect(await answer(await post("/registry/heartbeat", heartbeatBody(worker, sessionId), token, foreign))).toEqual(
      unknown,
    );
    expect(await answer(await post("/registry/release", [row], token, foreign))).toEqual(unknown);
    expect(await answer(await post("/registry/tag", { ...row, tag: "x" }, token, foreign))).toEqual(unknown);
    expect(await answer(await post("/registry/deregister", { sessionId }, token, foreign))).toEqual(unknown);
    expect(
      await answer(await post("/registry/register", registerBody(worker, { clientId: "keyed" }), token, foreign)),
    ).toEqual({
      status: 409,
      body: { error: "client belongs to another account" },
    });
    expect(await t.snapshot()).toEqual(before);
    // The foreign node still registers a client of its own.
    expect((await registerOk(foreign, token, registerBody(worker, { clientId: "foreign-own" }))).sessionId).toMatch(
      /\S/,
    );
  });
});
