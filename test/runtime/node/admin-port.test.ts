import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { CONSOLE_CSP, CONSOLE_HTML } from "../../../src/console/assets.generated.ts";
import { freePort } from "../../../src/runtime/node/process/free-port.ts";
import { type ChallengeServer, startChallengeServer } from "../../support/challenge-server.ts";
import { type Fleet, startFleet } from "../../support/fleet.ts";
import { registerBody } from "../../support/registration.ts";

/**
 * PINBOARD_ADMIN_PORT on the real Node entry: the registry, the console, /openapi.json and
 * /metrics answer on the admin listener only (their own origin), the data port keeps the data
 * plane and the probes. A worker page can then never share the console's origin. The workers of
 * the fleet register on the admin port; clients reach them through the data port.
 */

let fleet: Fleet;
let data: string;
let admin: string;
let operator: string;
let worker: string;
let prober: ChallengeServer;

beforeAll(async () => {
  fleet = await startFleet({ env: { PINBOARD_ADMIN_PORT: String(await freePort()) } });
  await fleet.skipColdStart();
  data = fleet.pb.url;
  admin = fleet.pb.adminUrl!;
  [operator, worker, prober] = await Promise.all([
    fleet.pb.operatorCredential(),
    fleet.pb.workerCredential(),
    startChallengeServer(),
  ]);
});
afterAll(async () => {
  await prober?.close();
  await fleet?.close();
});

const bearer = (token: string) => ({ authorization: `Bearer ${token}` });
const registerOn = (base: string) =>
  fetch(`${base}/registry/register`, {
    method: "POST",
    headers: { ...bearer(worker), "content-type": "application/json" },
    body: JSON.stringify(registerBody(prober, { namespaces: ["/probe"] })),
  });

async function answer(res: Response): Promise<[number, unknown]> {
  const text = await res.text();
  return [res.status, text === "" ? "" : JSON.parse(text)];
}

describe("the data port with PINBOARD_ADMIN_PORT", () => {
  it("answers the registry, the console, /openapi.json and /metrics as any unknown namespace: 404", async () => {
    const unknown = [404, { error: "unknown namespace" }];
    expect(await answer(await fetch(`${data}/console`))).toEqual(unknown);
    expect(await answer(await fetch(`${data}/openapi.json`))).toEqual(unknown);
    expect(await answer(await fetch(`${data}/metrics`, { headers: bearer(operator) }))).toEqual(unknown);
    expect(await answer(await fetch(`${data}/registry/health`, { headers: bearer(operator) }))).toEqual(unknown);
    expect(await answer(await fetch(`${data}/registry/workers`, { headers: bearer(operator) }))).toEqual(unknown);
    expect(await answer(await registerOn(data))).toEqual(unknown);
    // The register never reached the registry: no probe of the worker.
    expect(prober.seen).toEqual([]);
  });

  it("keeps the probes and the data plane", async () => {
    expect(await answer(await fetch(`${data}/healthz`))).toEqual([200, { ok: true }]);
    expect(await answer(await fetch(`${data}/readyz`))).toEqual([200, ""]);
    const res = await fetch(`${data}/echo/e1/hello?x=1`);
    expect(res.status).toBe(200);
    expect(await res.json()).toMatchObject({ method: "GET", path: "/hello", query: "?x=1" });
  });
});

describe("the admin port", () => {
  it("serves the console and /openapi.json", async () => {
    const page = await fetch(`${admin}/console`);
    expect(page.status).toBe(200);
    expect(page.headers.get("content-security-policy")).toBe(CONSOLE_CSP);
    expect(await page.text()).toBe(CONSOLE_HTML);
    const api = await fetch(`${admin}/openapi.json`);
    expect(api.status).toBe(200);
    expect(((await api.json()) as { openapi: string }).openapi).toBe("3.1.0");
  });

  it("serves the registry, /metrics and the probes", async () => {
    const reg = await registerOn(admin);
    expect(reg.status).toBe(200);
    expect(Object.keys((await reg.json()) as object).sort()).toEqual(["draining", "expiresInMs", "sessionId"]);
    const workers = (await (await fetch(`${admin}/registry/workers`, { headers: bearer(operator) })).json()) as {
      workers: Array<{ namespaces: string[] }>;
    };
    expect(workers.workers.map((w) => w.namespaces).sort()).toEqual([["/echo"], ["/probe"]]);
    const metrics = await fetch(`${admin}/metrics`, { headers: bearer(operator) });
    expect(metrics.status).toBe(200);
    expect(await metrics.text()).toContain("pinboard_resolutions_total");
    expect(await answer(await fetch(`${admin}/healthz`))).toEqual([200, { ok: true }]);
    expect(await answer(await fetch(`${admin}/readyz`))).toEqual([200, ""]);
  });

  it("serves no data plane: a worker's path is 404 not found and never forwarded", async () => {
    const before = (await (await fetch(`${data}/echo/e2/count`)).json()) as { hits: number };
    expect(await answer(await fetch(`${admin}/echo/e2/count`))).toEqual([404, { error: "not found" }]);
    const after = (await (await fetch(`${data}/echo/e2/count`)).json()) as { hits: number };
    expect(after.hits).toBe(before.hits + 1);
  });
});
