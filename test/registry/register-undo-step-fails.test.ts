import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it, vi } from "vitest";
import { Keys, SINGLE_ENV } from "../../src/redis/keys.ts";
import type { RedisPort } from "../../src/redis/port.ts";
import type { ChallengeServer } from "../support/challenge-server.ts";
import { startTestPinboard, type TestPinboard } from "../support/pinboard-app.ts";
import type { TestRedis } from "../support/redis.ts";
import { registerBody, registerOk } from "../support/registration.ts";
import { useRegistryFixture } from "../support/registry-fixture.ts";
import { getRow, putRow } from "../support/rows.ts";

/**
 * A register undo whose own deregister step fails too (register-fanout.ts, undoRegistration):
 * the reclaim fails for real (one bucket's placements hash is a string: WRONGTYPE, as in
 * register-undo.test.ts), and Redis drops the connection under the undo's deregister-session
 * call (the one call this file's port fails). The undo goes on: the step's failure is logged by
 * name, the rows go back and every mirror and list entry is still removed, so nothing a resolve
 * reads names the failed session; what stays is its record, which nobody heartbeats. The answer
 * is the reclaim's own failure (500 internal error), not the undo's (it would be a 503).
 */

const keys = new Keys("pinboard:", 16);
const SESSIONS = "pinboard:{global}:sessions";

let t: TestRedis;
let worker: ChallengeServer;
let token: string;
useRegistryFixture({}, (f) => ({ t, worker, token } = f), { worker: { secret: "undo-step-secret-9d41" } });

/** Fails every deregister-session call while `on`, as a dropped connection would; the rest reaches Redis. */
const dropDeregister = { on: false, seen: 0 };
function droppingDeregister(inner: RedisPort): RedisPort {
  const dropped = () => {
    dropDeregister.seen++;
    return Promise.reject(new Error("Connection is closed."));
  };
  return new Proxy(inner, {
    get(target, prop) {
      if (prop === "run")
        return (...args: Parameters<RedisPort["run"]>) =>
          dropDeregister.on && args[0].name === "deregister-session" ? dropped() : target.run(...args);
      if (prop === "runMany")
        return (calls: Parameters<RedisPort["runMany"]>[0]) =>
          dropDeregister.on && calls.some((c) => c.script.name === "deregister-session")
            ? dropped()
            : target.runMany(calls);
      // No metered view of the inner port: it would bypass this one.
      if (prop === "metered") return undefined;
      const value = Reflect.get(target, prop) as unknown;
      return typeof value === "function" ? value.bind(target) : value;
    },
  });
}

let pb: TestPinboard;
beforeAll(async () => {
  pb = await startTestPinboard(t, { PINBOARD_LOG_LEVEL: "warn" }, { wrapRedis: droppingDeregister });
});
afterAll(() => pb?.close());

let logged: string[] = [];
beforeEach(() => {
  logged = [];
  vi.spyOn(console, "error").mockImplementation((...args: unknown[]) => void logged.push(args.map(String).join(" ")));
});
afterEach(() => {
  vi.restoreAllMocks();
  dropDeregister.on = false;
});

/** `count` ids in bucket `b`. */
function idsIn(b: number, count: number): string[] {
  const out: string[] = [];
  for (let i = 0; out.length < count; i++) if (keys.bucketOf(`held-${b}-${i}`) === b) out.push(`held-${b}-${i}`);
  return out;
}

describe("a register undo whose deregister step fails", () => {
  it("logs the step, still gives the rows back and removes every mirror, and answers the reclaim's 500", async () => {
    const clientId = "undo-step-client";
    const prev = await registerOk(pb, token, registerBody(worker, { clientId }));
    const held = [...idsIn(0, 2), ...idsIn(5, 2)];
    for (const id of held) await putRow(t, "/threads", id, { sessionId: prev.sessionId, epoch: "41" });
    const broken = keys.placements(7, SINGLE_ENV, "/threads");
    await t.redis.client.set(broken, "not a hash");
    const [victim] = idsIn(7, 1);

    dropDeregister.on = true;
    const body = registerBody(worker, {
      clientId,
      prevSessionId: prev.sessionId,
      instances: { "/threads": [...held, victim!] },
    });
    const res = await pb.call("POST", "/registry/register", { token, body });
    expect({ status: res.status, body: await res.json() }).toEqual({ status: 500, body: { error: "internal error" } });
    expect(dropDeregister.seen).toBe(1);

    // The record stays (its deregister failed); nothing a resolve reads names it.
    const sessions = Object.keys(await t.redis.client.hgetall(SESSIONS));
    expect(sessions).toHaveLength(1);
    expect(sessions[0]).not.toBe(prev.sessionId);
    for (const b of keys.allBuckets()) {
      expect(await t.redis.client.hkeys(keys.workers(b)), `bucket ${b}`).toEqual([]);
      expect(await t.redis.client.hkeys(`pinboard:{${b}}:nsw:/threads`), `bucket ${b}`).toEqual([]);
    }
    for (const id of held) expect((await getRow(t, "/threads", id))?.sessionId).toBe(prev.sessionId);

    const lines = logged.join("\n");
    expect(lines).toMatch(/"msg":"register undo step failed".*"step":"record".*redis unavailable/);
    expect(lines).toContain('"msg":"register undone"');
    expect(lines).toMatch(/"msg":"unhandled error".*WRONGTYPE/);
    expect(lines).not.toContain(worker.secret);

    // With Redis whole again, the worker's next register replaces the left record and reclaims.
    dropDeregister.on = false;
    await t.redis.client.del(broken);
    const retry = await registerOk(
      pb,
      token,
      registerBody(worker, { clientId, prevSessionId: prev.sessionId, instances: { "/threads": [...held, victim!] } }),
    );
    expect(retry.duplicates).toEqual([{ ns: "/threads", id: victim }]);
    for (const id of held) expect((await getRow(t, "/threads", id))?.sessionId).toBe(retry.sessionId);
  });
});
