import { describe, expect, it } from "vitest";
import { resolvePlacement } from "../../src/placement/resolver.ts";
import { SINGLE_ENV } from "../../src/redis/keys.ts";
import type { ChallengeServer } from "../support/challenge-server.ts";
import type { TestPinboard } from "../support/pinboard-app.ts";
import { endColdStart, type TestRedis } from "../support/redis.ts";
import { registerBody, registerOk } from "../support/registration.ts";
import { useRegistryFixture } from "../support/registry-fixture.ts";
import { getRow, putRow } from "../support/rows.ts";

/**
 * POST /registry/release: "a row is freed only while its sessionId matches and its epoch equals
 * the quoted one ('' quotes an epoch-less row)". An item that quotes no epoch at all frees the
 * session's row whatever its epoch; "" is a quote, of an epoch-less row only.
 */

let t: TestRedis;
let pb: TestPinboard;
let worker: ChallengeServer;
let token: string;
useRegistryFixture({}, (f) => ({ t, pb, worker, token } = f));

async function release(items: unknown[]): Promise<{ status: number; body: unknown }> {
  const res = await pb.call("POST", "/registry/release", { token, body: items });
  return { status: res.status, body: await res.json() };
}

describe("release and the quoted epoch", () => {
  it("without epoch frees a row that has one; '' does not; the right epoch does; a wrong one does not", async () => {
    const { sessionId } = await registerOk(pb, token, registerBody(worker));
    const item = (id: string, epoch?: string | null) => ({
      sessionId,
      namespace: "/threads",
      id,
      ...(epoch !== undefined ? { epoch } : {}),
    });
    for (const id of ["absent", "null", "empty", "right", "wrong"])
      await putRow(t, "/threads", id, { sessionId, epoch: "1234" });

    expect(await release([item("empty", "")])).toEqual({ status: 200, body: { released: 0 } });
    expect(await getRow(t, "/threads", "empty")).not.toBeNull();
    expect(await release([item("wrong", "1233")])).toEqual({ status: 200, body: { released: 0 } });
    expect(await getRow(t, "/threads", "wrong")).not.toBeNull();

    expect(await release([item("absent")])).toEqual({ status: 200, body: { released: 1 } });
    expect(await getRow(t, "/threads", "absent")).toBeNull();
    expect(await release([item("null", null)])).toEqual({ status: 200, body: { released: 1 } });
    expect(await getRow(t, "/threads", "null")).toBeNull();
    expect(await release([item("right", "1234")])).toEqual({ status: 200, body: { released: 1 } });
    expect(await getRow(t, "/threads", "right")).toBeNull();
  });

  it("'' and no epoch both free an epoch-less row", async () => {
    const { sessionId } = await registerOk(pb, token, registerBody(worker));
    await putRow(t, "/threads", "bare-1", { sessionId });
    await putRow(t, "/threads", "bare-2", { sessionId });
    expect(
      await release([
        { sessionId, namespace: "/threads", id: "bare-1", epoch: "" },
        { sessionId, namespace: "/threads", id: "bare-2" },
      ]),
    ).toEqual({
      status: 200,
      body: { released: 2 },
    });
    expect(await getRow(t, "/threads", "bare-1")).toBeNull();
    expect(await getRow(t, "/threads", "bare-2")).toBeNull();
  });

  it("without epoch still frees only the session's own row", async () => {
    const { sessionId } = await registerOk(pb, token, registerBody(worker));
    await putRow(t, "/threads", "theirs", { sessionId: "another-session", epoch: "77" });
    expect(
      await release([
        { sessionId, namespace: "/threads", id: "theirs" },
        { sessionId, namespace: "/threads", id: "missing" },
      ]),
    ).toEqual({
      status: 200,
      body: { released: 0 },
    });
    expect(await getRow(t, "/threads", "theirs")).toEqual({
      sessionId: "another-session",
      epoch: "77",
      expiry: "",
      hostname: "",
      tag: "",
    });
  });

  it("frees a placement the resolve minted, quoted or not", async () => {
    const { sessionId } = await registerOk(pb, token, registerBody(worker, { namespaces: ["/minted"] }));
    await endColdStart(t, pb.deps.keys);
    const a = await resolvePlacement(pb.deps, {
      ns: "/minted",
      id: "m-1",
      env: SINGLE_ENV,
      hostname: "",
      takeover: "",
    });
    const b = await resolvePlacement(pb.deps, {
      ns: "/minted",
      id: "m-2",
      env: SINGLE_ENV,
      hostname: "",
      takeover: "",
    });
    expect([a.sessionId, b.sessionId]).toEqual([sessionId, sessionId]);
    expect(
      await release([
        { sessionId, namespace: "/minted", id: "m-1" },
        { sessionId, namespace: "/minted", id: "m-2", epoch: b.epoch },
      ]),
    ).toEqual({
      status: 200,
      body: { released: 2 },
    });
    expect(await getRow(t, "/minted", "m-1")).toBeNull();
    expect(await getRow(t, "/minted", "m-2")).toBeNull();
  });
});
