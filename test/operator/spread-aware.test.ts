import { describe, expect, it } from "vitest";
import { credential, type TestPinboard } from "../support/pinboard-app.ts";
import type { TestRedis } from "../support/redis.ts";
import { useRegistryFixture } from "../support/registry-fixture.ts";
import { expectRouteOk } from "../support/route-answers.ts";
import { putRows, type RowFields } from "../support/rows.ts";
import { useScriptedWorkers, viaApp } from "../support/scripted-worker.ts";

/**
 * GET /registry/spread in hostname-aware mode: the spaces of the envs the claim covers, placed
 * rows counted for their live owner when the claim covers its hostname and env, and the rows
 * without a live owner judged on their own hostname, so a claim limited to some hostnames learns
 * nothing of the others' rows.
 */

let t: TestRedis;
let pb: TestPinboard;
let token: string;
useRegistryFixture({ PINBOARD_HOSTNAME_AWARE: "true" }, (f) => ({ t, pb, token } = f));

const startWorker = useScriptedWorkers();

async function register(fields: Record<string, unknown>): Promise<string> {
  const w = await startWorker();
  return w.register(viaApp(pb), token, fields);
}

async function spread(claim: Record<string, unknown>) {
  const res = await pb.call("GET", "/registry/spread", { token: await credential("pinboard:operator", claim) });
  const text = await res.text();
  expect(res.status).toBe(200);
  const { countedAt: _, ...rest } = expectRouteOk("GET /registry/spread", text) as { countedAt: number };
  return rest;
}

const rows = (tag: string, n: number, row: RowFields) =>
  Array.from({ length: n }, (_, i) => ({ id: `${tag}-${i}`, row }));

describe("GET /registry/spread, hostname-aware", () => {
  it("counts by the claim's hostnames and envs, judging unowned rows on their own hostname", async () => {
    const a = await register({ hostname: "a.example", env: "prod", namespaces: ["/hs"] });
    const b = await register({ hostname: "b.example", env: "prod", namespaces: ["/hs"] });
    const c = await register({ hostname: "c.example", env: "staging", namespaces: ["/hs"] });
    await putRows(
      t,
      "/hs",
      [
        ...rows("a", 30, { sessionId: a, epoch: "1", hostname: "a.example" }),
        ...rows("b", 20, { sessionId: b, epoch: "2", hostname: "b.example" }),
        ...rows("a-gone", 7, { sessionId: "gone", epoch: "3", hostname: "a.example" }),
        ...rows("b-gone", 4, { sessionId: "gone", epoch: "4", hostname: "b.example" }),
        ...rows("a-placeholder", 2, { sessionId: "", hostname: "a.example" }),
      ],
      "prod",
    );
    await putRows(t, "/hs", rows("c", 11, { sessionId: c, epoch: "5", hostname: "c.example" }), "staging");

    // Workers are listed by hostname (then session), as /registry/workers lists them.
    expect(await spread({})).toEqual({
      complete: true,
      workers: [
        { sessionId: a, placements: 30 },
        { sessionId: b, placements: 20 },
        { sessionId: c, placements: 11 },
      ],
      unowned: 13,
    });
    expect(await spread({ hostnames: ["a.example"] })).toEqual({
      complete: true,
      workers: [{ sessionId: a, placements: 30 }],
      unowned: 9,
    });
    expect(await spread({ hostnames: ["b.example"] })).toEqual({
      complete: true,
      workers: [{ sessionId: b, placements: 20 }],
      unowned: 4,
    });
    expect(await spread({ envs: ["staging"] })).toEqual({
      complete: true,
      workers: [{ sessionId: c, placements: 11 }],
      unowned: 0,
    });
    expect(await spread({ envs: ["prod"], hostnames: ["a.example", "b.example"] })).toEqual({
      complete: true,
      workers: [
        { sessionId: a, placements: 30 },
        { sessionId: b, placements: 20 },
      ],
      unowned: 13,
    });
  });
});
