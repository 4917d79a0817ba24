import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { isSealed } from "../../../src/auth/worker-secrets.ts";
import { verifyAttestation } from "../../../src/contract/attestation.ts";
import type { PinnedWorker } from "../../../src/pinned/index.ts";
import { Echo } from "../../support/echo-instance.ts";
import { everyStoredString } from "../../support/keyspace.ts";
import { credential } from "../../support/pinboard-app.ts";
import { expectRouteOk } from "../../support/route-answers.ts";
import type { WorkersEntry } from "../../support/workerd-entry.ts";
import { startWorkersFleet, type WorkersFleet } from "../../support/workers-fleet.ts";

let fleet: WorkersFleet;
let entry: WorkersEntry;
let worker: PinnedWorker;

beforeAll(async () => {
  fleet = await startWorkersFleet({ namespaces: { "/echo": Echo } });
  ({ entry, worker } = fleet);
});
afterAll(() => fleet?.stop());

describe("the data plane inside workerd", () => {
  it("places, attests and forwards through @upstash/redis and the REST bridge", async () => {
    const res = await fetch(`${entry.url}/echo/w-1/path?q=1`, {
      headers: { "pinboard-epoch": "1", "x-custom": "kept" },
    });
    expect(res.status).toBe(200);
    expect(res.headers.get("x-accel-buffering")).toBe("no");
    const body = (await res.json()) as { path: string; query: string; epoch: string; headers: Record<string, string> };
    expect(body.path).toBe("/path");
    expect(body.query).toBe("?q=1");
    expect(body.headers["x-custom"]).toBe("kept");
    expect(body.headers["pinboard-epoch"]).toBe(body.epoch);
    expect(body.epoch).not.toBe("1");
    const claims = await verifyAttestation(body.headers["pinboard-attestation"]!, worker.secret, worker.sessionId!);
    expect(claims?.aud).toBe(worker.sessionId);
    // Registered through this entry: Redis holds the secret sealed, and the forward opened it.
    const record = JSON.parse((await fleet.t.redis.hget("pinboard:{global}:sessions", worker.sessionId!))!);
    expect(isSealed(record.secret)).toBe(true);
    expect((await everyStoredString(fleet.t)).filter((value) => value.includes(worker.secret))).toEqual([]);

    const again = (await (await fetch(`${entry.url}/echo/w-1`)).json()) as { epoch: string; hits: number };
    expect(again.epoch).toBe(body.epoch);
    expect(again.hits).toBe(2);
  });

  it("answers the routing errors of the spec", async () => {
    const unknown = await fetch(`${entry.url}/nowhere/x`);
    expect(unknown.status).toBe(404);
    expect(await unknown.json()).toEqual({ error: "unknown namespace" });
    const bad = await fetch(`${entry.url}/echo/bad*id`);
    expect(bad.status).toBe(400);
    expect(bad.headers.get("content-type")).toMatch(/^text\/plain/);
  });

  it("keeps this isolate's traffic history at /registry/history", async () => {
    const token = await credential("pinboard:operator");
    const read = async () => {
      const res = await fetch(`${entry.url}/registry/history`, { headers: { authorization: `Bearer ${token}` } });
      const text = await res.text();
      expect(res.status, text).toBe(200);
      const { points } = expectRouteOk("GET /registry/history", text) as { points: Array<{ forwards: number }> };
      return points.reduce((sum, p) => sum + p.forwards, 0);
    };
    const before = await read();
    const res = await fetch(`${entry.url}/echo/w-history`);
    expect(res.status).toBe(200);
    await res.arrayBuffer();
    // Miniflare runs one isolate: the same history saw the forward.
    expect(await read()).toBe(before + 1);
    expect((await fetch(`${entry.url}/registry/history`)).status).toBe(401);
  });
});
