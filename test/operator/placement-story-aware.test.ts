import { describe, expect, it } from "vitest";
import { credential, type TestPinboard } from "../support/pinboard-app.ts";
import type { TestRedis } from "../support/redis.ts";
import { useRegistryFixture } from "../support/registry-fixture.ts";
import { expectRouteOk } from "../support/route-answers.ts";
import { putRows } from "../support/rows.ts";
import { useScriptedWorkers, viaApp } from "../support/scripted-worker.ts";

/**
 * GET /registry/placement in hostname-aware mode: one entry per env whose space holds the id,
 * each judged as wind_down judges a row (on its owner record's hostname and env, or on the row's
 * own hostname once the record is gone), so a claim sees only its envs and hostnames, and an id
 * none of whose rows it may see is the 404 of a missing id.
 */

let t: TestRedis;
let pb: TestPinboard;
let token: string;
useRegistryFixture({ PINBOARD_HOSTNAME_AWARE: "true" }, (f) => ({ t, pb, token } = f));

const startWorker = useScriptedWorkers();
let registered = 0;

async function register(fields: Record<string, unknown>): Promise<{ sid: string; clientId: string }> {
  const w = await startWorker({ stats: { status: 200, body: JSON.stringify({ instances: [] }) } });
  const clientId = `aware-${++registered}`;
  return { sid: await w.register(viaApp(pb), token, { ...fields, clientId }), clientId };
}

async function story(id: string, claim: Record<string, unknown> = {}) {
  const res = await pb.call("GET", `/registry/placement?ns=/hz&id=${id}`, {
    token: await credential("pinboard:operator", claim),
  });
  const text = await res.text();
  if (res.status === 200) expectRouteOk("GET /registry/placement", text);
  return { status: res.status, body: JSON.parse(text) as unknown };
}

describe("GET /registry/placement, hostname-aware", () => {
  it("answers the id's row in each env the claim covers, judged on its owner or its own hostname", async () => {
    const a = await register({ hostname: "a.example", env: "prod", namespaces: ["/hz"] });
    const b = await register({ hostname: "b.example", env: "staging", namespaces: ["/hz"] });
    await putRows(t, "/hz", [{ id: "doc", row: { sessionId: a.sid, epoch: "40", hostname: "a.example" } }], "prod");
    await putRows(t, "/hz", [{ id: "doc", row: { sessionId: b.sid, epoch: "41", hostname: "b.example" } }], "staging");
    await putRows(t, "/hz", [{ id: "orphan", row: { sessionId: "gone", epoch: "42", hostname: "a.example" } }], "prod");

    const common = { namespace: "/hz", fence: "none", overwritten: null, alarm: null, instance: null };
    const prod = { ...common, id: "doc", env: "prod", hostname: "a.example", sessionId: a.sid, clientId: a.clientId };
    const staging = {
      ...common,
      id: "doc",
      env: "staging",
      hostname: "b.example",
      sessionId: b.sid,
      clientId: b.clientId,
    };
    const live = { owner: "live" };
    expect(await story("doc")).toEqual({
      status: 200,
      body: {
        placements: [
          { ...prod, ...live, epoch: "40" },
          { ...staging, ...live, epoch: "41" },
        ],
      },
    });
    expect(await story("doc", { envs: ["prod"] })).toEqual({
      status: 200,
      body: { placements: [{ ...prod, ...live, epoch: "40" }] },
    });
    expect(await story("doc", { hostnames: ["b.example"] })).toEqual({
      status: 200,
      body: { placements: [{ ...staging, ...live, epoch: "41" }] },
    });

    const missing = await story("never");
    expect(missing).toEqual({ status: 404, body: { error: "placement not found" } });
    expect(await story("doc", { hostnames: ["c.example"] })).toEqual(missing);
    expect(await story("doc", { envs: ["dev"] })).toEqual(missing);

    // A row whose owner is gone is judged on its own hostname.
    const orphan = { ...common, id: "orphan", env: "prod", hostname: "a.example", sessionId: "gone", clientId: null };
    expect(await story("orphan", { hostnames: ["a.example"] })).toEqual({
      status: 200,
      body: { placements: [{ ...orphan, owner: "dead", epoch: "42" }] },
    });
    expect(await story("orphan", { hostnames: ["b.example"] })).toEqual(missing);
  });
});
