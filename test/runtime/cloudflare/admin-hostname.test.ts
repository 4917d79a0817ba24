import { describe, expect, it } from "vitest";
import { CONSOLE_HTML } from "../../../src/console/assets.generated.ts";
import type { ChallengeServer } from "../../support/challenge-server.ts";
import { rawRequest } from "../../support/raw-http.ts";
import type { TestRedis } from "../../support/redis.ts";
import { registerBody } from "../../support/registration.ts";
import type { WorkersEntry } from "../../support/workerd-entry.ts";
import { useWorkersEntryFixture } from "../../support/workers-entry-fixture.ts";

/**
 * PINBOARD_ADMIN_HOSTNAME on the Workers entry (one fetch handler for every route of the Worker):
 * the admin hostname gets the registry, the console and /openapi.json, and no data plane; every
 * other hostname gets health and the data plane only. The hostname is the request's Host, as a
 * custom domain or route delivers it.
 */

const ADMIN = "pinboard-admin.example.test";
const DATA = "pinboard.example.test";

let t: TestRedis;
let wk: WorkersEntry;
let worker: ChallengeServer;
let token: string;

useWorkersEntryFixture(
  { PINBOARD_ADMIN_HOSTNAME: ADMIN, PINBOARD_LOG_LEVEL: "error" },
  (f) => ({ t, wk, worker, token } = f),
);

const on = (
  host: string,
  path: string,
  options: { method?: string; headers?: Record<string, string>; body?: unknown } = {},
) =>
  rawRequest(`${wk.url}${path}`, {
    method: options.method ?? "GET",
    headers: {
      host,
      ...options.headers,
      ...(options.body !== undefined ? { "content-type": "application/json" } : {}),
    },
    ...(options.body !== undefined ? { body: JSON.stringify(options.body) } : {}),
  });

describe("the Workers entry with PINBOARD_ADMIN_HOSTNAME", () => {
  it("serves the console, /openapi.json and the registry on the admin hostname only", async () => {
    const page = await on(ADMIN, "/console");
    expect(page.status).toBe(200);
    expect(page.body).toBe(CONSOLE_HTML);
    expect((await on(ADMIN, "/openapi.json")).status).toBe(200);
    const reg = await on(ADMIN, "/registry/register", {
      method: "POST",
      headers: { authorization: `Bearer ${token}` },
      body: registerBody(worker),
    });
    expect(reg.status).toBe(200);
    expect(await on(ADMIN, "/threads/t1")).toEqual(
      expect.objectContaining({ status: 404, body: '{"error":"not found"}' }),
    );
  });

  it("answers them as unknown namespaces on any other hostname, which keeps health and the data plane", async () => {
    const probes = worker.seen.length;
    for (const path of ["/console", "/openapi.json", "/registry/health"]) {
      expect(await on(DATA, path)).toEqual(
        expect.objectContaining({ status: 404, body: '{"error":"unknown namespace"}' }),
      );
    }
    // Without a body: workerd's local server drops a connection answered before its body is read
    // (any early answer to a POST, with or without this setting), which is not what this checks.
    const reg = await on(DATA, "/registry/register", { method: "POST", headers: { authorization: `Bearer ${token}` } });
    expect([reg.status, reg.body]).toEqual([404, '{"error":"unknown namespace"}']);
    expect(worker.seen.length).toBe(probes);
    expect(await on(DATA, "/healthz")).toEqual(expect.objectContaining({ status: 200, body: '{"ok":true}' }));
  });
});
