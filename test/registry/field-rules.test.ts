import { describe, expect, it } from "vitest";
import type { ChallengeServer } from "../support/challenge-server.ts";
import { credential, type TestPinboard } from "../support/pinboard-app.ts";
import type { TestRedis } from "../support/redis.ts";
import { registerBody } from "../support/registration.ts";
import { useRegistryFixture } from "../support/registry-fixture.ts";

let t: TestRedis, single: TestPinboard, aware: TestPinboard, worker: ChallengeServer, token: string;
useRegistryFixture(
  {},
  (f) =>
    ({
      t,
      pb: single,
      pinboards: { aware },
      worker,
      token,
    } = f),
  {
    // A second fleet on the same Redis under its own prefix, in hostname-aware mode.
    pinboards: { aware: { PINBOARD_HOSTNAME_AWARE: "true", PINBOARD_PREFIX: "aware:" } },
  },
);

/** Registers and expects a refusal that changed nothing and never probed the worker. */
type Claim = Parameters<typeof credential>[1];

async function refused(pb: TestPinboard, body: Record<string, unknown>, status: number, error: string, tok = token) {
  const before = await t.snapshot();
  const probes = worker.seen.length;
  const res = await pb.call("POST", "/registry/register", { token: tok, body });
  expect(await res.json()).toEqual({ error });
  expect(res.status).toBe(status);
  expect(worker.seen.length).toBe(probes);
  expect(await t.snapshot()).toEqual(before);
}

describe("register field rules, single mode", () => {
  it("rejects hostname, env, envs, takeover and a nonzero epoch", async () => {
    await refused(
      single,
      registerBody(worker, { hostname: "a.example" }),
      400,
      "hostname requires hostname-aware mode",
    );
    await refused(single, registerBody(worker, { env: "prod" }), 400, "env requires hostname-aware mode");
    await refused(
      single,
      registerBody(worker, { envs: { "/threads": "prod" } }),
      400,
      "envs requires hostname-aware mode",
    );
    await refused(single, registerBody(worker, { takeover: "deny" }), 400, "takeover requires hostname-aware mode");
    await refused(single, registerBody(worker, { epoch: 3 }), 400, "epoch requires hostname-aware mode");
    const zero = await single.call("POST", "/registry/register", { token, body: registerBody(worker, { epoch: 0 }) });
    expect(zero.status).toBe(200);
  });

  it("checks namespaces, instances keys and the advertise URL", async () => {
    await refused(single, registerBody(worker, { namespaces: ["threads"] }), 400, "invalid namespace: threads");
    await refused(single, registerBody(worker, { namespaces: ["/a/b"] }), 400, "invalid namespace: /a/b");
    await refused(
      single,
      registerBody(worker, { instances: { "/other": ["x"] } }),
      400,
      "namespace not registered: /other",
    );
    await refused(single, registerBody(worker, { instances: { "/threads": ["bad id"] } }), 400, "invalid id: bad id");
    for (const url of [
      "ftp://127.0.0.1",
      "http://user:pw@127.0.0.1:1",
      "not a url",
      "http://127.0.0.1:1/?q=1",
      "http://127.0.0.1:1/#f",
    ]) {
      await refused(single, registerBody(worker, { advertiseUrl: url }), 400, `invalid advertiseUrl: ${url}`);
    }
  });
});

describe("register field rules, hostname-aware mode", () => {
  it("requires hostname and refuses *, whitespace, / and : in hostname and env", async () => {
    await refused(aware, registerBody(worker), 400, "hostname is required in hostname-aware mode");
    for (const bad of ["a*b", "a b", "a/b", "a:b"]) {
      await refused(aware, registerBody(worker, { hostname: bad }), 400, `invalid hostname: ${bad}`);
      await refused(aware, registerBody(worker, { hostname: "ok", env: bad }), 400, `invalid env: ${bad}`);
      await refused(
        aware,
        registerBody(worker, { hostname: "ok", envs: { "/threads": bad } }),
        400,
        `invalid env: ${bad}`,
      );
    }
    await refused(
      aware,
      registerBody(worker, { hostname: "ok", envs: { "/other": "x" } }),
      400,
      "namespace not registered: /other",
    );
  });

  it("lowercases hostname and env, defaults env to hostname and takeover to wind_down", async () => {
    const res = await aware.call("POST", "/registry/register", {
      token,
      body: registerBody(worker, { hostname: "App.Example.COM" }),
    });
    expect(res.status).toBe(200);
    const { sessionId } = (await res.json()) as { sessionId: string };
    const stored = JSON.parse((await t.redis.hget("aware:{global}:sessions", sessionId))!);
    expect(stored).toMatchObject({ hostname: "app.example.com", env: "app.example.com", takeover: "wind_down" });
  });
});

describe("credential scope is checked before the probe", () => {
  it("answers each 403 string of the spec", async () => {
    const host = new URL(worker.url).hostname;
    const port = new URL(worker.url).port;
    const cases: [on: TestPinboard, fields: Record<string, unknown>, claim: Claim, error: string][] = [
      [single, {}, { namespaces: ["/rooms"] }, "namespace not allowed: /threads"],
      [single, {}, { allowedBackendHosts: ["10.0.0.1"] }, `backend host not allowed: ${host}`],
      [single, {}, { allowedPorts: [1] }, `advertiseUrl port not allowed: ${port}`],
      [aware, { hostname: "a.example" }, { hostnames: ["b.example"] }, "hostname not allowed: a.example"],
      [aware, { hostname: "a.example", env: "prod" }, { envs: ["staging"] }, "env not allowed: prod"],
      [
        aware,
        { hostname: "a.example", envs: { "/threads": "prod" } },
        { envs: ["a.example"] },
        "env not allowed: prod",
      ],
    ];
    for (const [on, fields, claim, error] of cases) {
      await refused(on, registerBody(worker, fields), 403, error, await credential("pinboard:worker", claim));
    }
  });

  it("accepts a credential whose claims cover the body exactly", async () => {
    const tok = await credential("pinboard:worker", {
      namespaces: ["/threads"],
      allowedBackendHosts: ["127.0.0.1"],
      allowedPorts: [Number(new URL(worker.url).port)],
      hostnames: ["a.example"],
      envs: ["prod"],
    });
    const res = await aware.call("POST", "/registry/register", {
      token: tok,
      body: registerBody(worker, { hostname: "a.example", env: "prod" }),
    });
    expect(res.status).toBe(200);
  });
});
