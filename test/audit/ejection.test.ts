import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { AuditEntry } from "../../src/audit/entry.ts";
import { type Fleet, startFleet } from "../support/fleet.ts";
import { until } from "../support/local-worker.ts";
import { expectRouteOk } from "../support/route-answers.ts";

/**
 * The data plane and the audit trail, against the real Node entry and workers built on the worker
 * library: forwards append nothing, whether they place an id or keep its owner; the fifth failing
 * forward in a row ejects the worker and records worker.ejected, on that failure's path.
 */

const AUDIT = "pinboard:{global}:audit";
let fleet: Fleet;

beforeAll(async () => {
  fleet = await startFleet({ workers: 2 });
  await fleet.skipColdStart();
});
afterAll(() => fleet?.close());

async function trail(query: string): Promise<AuditEntry[]> {
  const res = await fetch(`${fleet.pb.url}/registry/audit${query}`, {
    headers: { authorization: `Bearer ${await fleet.pb.operatorCredential()}` },
  });
  const text = await res.text();
  expect(res.status, text).toBe(200);
  return (expectRouteOk("GET /registry/audit", text) as { entries: AuditEntry[] }).entries;
}

const forward = async (path: string) => {
  const res = await fetch(`${fleet.pb.url}${path}`);
  const body = (await res.json().catch(() => null)) as { attestation?: { aud: string } } | null;
  return { status: res.status, owner: body?.attestation?.aud };
};

describe("the data plane records in the audit trail only on the failure path", () => {
  it("registers both workers; forwards that place or keep an owner append nothing", async () => {
    const registered = await trail("?type=worker.registered");
    expect(registered.map((e) => e.target.sessionId).sort()).toEqual(
      fleet.workers.map((w) => w.worker.sessionId).sort(),
    );
    const length = await fleet.t.redis.client.xlen(AUDIT);
    for (let i = 0; i < 10; i++) expect((await forward(`/echo/kept-${i % 3}`)).status).toBe(200);
    expect(await fleet.t.redis.client.xlen(AUDIT)).toBe(length);
  });

  it("the fifth 503 in a row ejects the worker and records worker.ejected with its client and namespaces", async () => {
    const { owner } = await forward("/echo/failing");
    const ejected = fleet.workers.find((w) => w.worker.sessionId === owner)!;
    for (let i = 0; i < 5; i++) expect((await forward("/echo/failing?status=503")).status).toBe(503);
    const entry = await until(async () =>
      (await trail("?type=worker.ejected")).find((e) => e.target.sessionId === owner),
    );
    expect(entry).toMatchObject({
      kind: "event",
      subject: null,
      via: "data-plane",
      target: { sessionId: owner, clientId: ejected.worker.clientId, namespaces: ["/echo"] },
      detail: { ejections: 1 },
    });
    expect(entry.detail.ejectedUntil).toBeGreaterThanOrEqual(entry.at + 30_000 - 1000);
    expect(await fleet.t.redis.hget("pinboard:{global}:audit:ejections", owner!)).toBe(
      String(entry.detail.ejectedUntil),
    );
  });
});
