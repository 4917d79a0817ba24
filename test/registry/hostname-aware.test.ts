import { describe, expect, it } from "vitest";
import type { ChallengeServer } from "../support/challenge-server.ts";
import type { TestPinboard } from "../support/pinboard-app.ts";
import type { TestRedis } from "../support/redis.ts";
import { heartbeatBody, registerBody, registerOk } from "../support/registration.ts";
import { useRegistryFixture } from "../support/registry-fixture.ts";

let t: TestRedis;
let pb: TestPinboard;
let worker: ChallengeServer;
let token: string;
useRegistryFixture({ PINBOARD_HOSTNAME_AWARE: "true" }, (f) => ({ t, pb, worker, token } = f));

const H = "pinboard:{global}:bindings:hostnames";
const E = "pinboard:{global}:bindings:envs";

describe("hostname-aware bindings", () => {
  it("binds (hostname, ns) to an env and the env to a takeover", async () => {
    await registerOk(pb, token, registerBody(worker, { hostname: "one.example", env: "blue", epoch: 1 }));
    expect(await t.redis.hget(H, "one.example/threads")).toBe("blue\n1");
    expect(await t.redis.hget(E, "blue")).toBe("wind_down\n1");
  });

  it("409 when (hostname, ns) is bound to another env at an equal or higher epoch", async () => {
    await registerOk(pb, token, registerBody(worker, { hostname: "two.example", env: "blue", epoch: 5 }));
    for (const epoch of [5, 4]) {
      const before = await t.snapshot();
      const res = await pb.call("POST", "/registry/register", {
        token,
        body: registerBody(worker, { hostname: "two.example", env: "green", epoch }),
      });
      expect(res.status).toBe(409);
      expect(await res.json()).toEqual({
        error: `hostname two.example/threads is bound to env blue at epoch 5, not green — register with a higher epoch to displace`,
      });
      expect(await t.snapshot()).toEqual(before);
    }
  });

  it("409 when the env agreed another takeover at an equal or higher epoch", async () => {
    await registerOk(
      pb,
      token,
      registerBody(worker, { hostname: "three.example", env: "red", takeover: "deny", epoch: 2 }),
    );
    const res = await pb.call("POST", "/registry/register", {
      token,
      body: registerBody(worker, { hostname: "four.example", env: "red", takeover: "wind_down", epoch: 2 }),
    });
    expect(res.status).toBe(409);
    expect(await res.json()).toEqual({
      error: "env red agreed takeover deny at epoch 2, not wind_down — register with a higher epoch to displace",
    });
    const higher = await pb.call("POST", "/registry/register", {
      token,
      body: registerBody(worker, { hostname: "four.example", env: "red", takeover: "wind_down", epoch: 3 }),
    });
    expect(higher.status).toBe(200);
    expect(await t.redis.hget(E, "red")).toBe("wind_down\n3");
  });

  it("a higher epoch displaces the binding, quarantines the (hostname, ns) for a lease and supersedes the old worker", async () => {
    const old = await registerOk(pb, token, registerBody(worker, { hostname: "five.example", env: "blue", epoch: 1 }));
    const started = Date.now();
    await registerOk(pb, token, registerBody(worker, { hostname: "five.example", env: "green", epoch: 2 }));
    expect(await t.redis.hget(H, "five.example/threads")).toBe("green\n2");
    const until = Number(await t.redis.hget("pinboard:{global}:bindings:quarantine", "five.example/threads"));
    expect(until).toBeGreaterThanOrEqual(started + 15000 - 1000);
    expect(until).toBeLessThanOrEqual(Date.now() + 15000 + 1000);

    const res = await pb.call("POST", "/registry/heartbeat", { token, body: heartbeatBody(worker, old.sessionId) });
    expect(res.status).toBe(409);
    expect(await res.json()).toEqual({
      error: "registration superseded: five.example/threads now bound to env green at epoch 2",
      superseded: true,
    });
    expect(await t.redis.hget("pinboard:{global}:sessions", old.sessionId)).toBeNull();
    expect(await t.redis.client.hexists("pinboard:{0}:nsw:five.example/threads", old.sessionId)).toBe(0);
  });

  it("envs overrides the env per namespace", async () => {
    await registerOk(
      pb,
      token,
      registerBody(worker, {
        hostname: "six.example",
        namespaces: ["/threads", "/rooms"],
        env: "blue",
        envs: { "/rooms": "purple" },
      }),
    );
    expect(await t.redis.hget(H, "six.example/threads")).toMatch(/^blue\n/);
    expect(await t.redis.hget(H, "six.example/rooms")).toMatch(/^purple\n/);
  });
});
