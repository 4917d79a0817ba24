import { describe, expect, it } from "vitest";
import { AUDIT_ENTRY_MAX_BYTES } from "../../src/audit/entry.ts";
import { recordAudit } from "../../src/audit/trail.ts";
import type { Logger } from "../../src/log/logger.ts";
import { readTrail } from "../support/audit-trail.ts";
import type { ChallengeServer } from "../support/challenge-server.ts";
import { credential, type TestPinboard } from "../support/pinboard-app.ts";
import type { TestRedis } from "../support/redis.ts";
import { registerBody, registerOk } from "../support/registration.ts";
import { useAwareRegistryFixture } from "../support/registry-fixture.ts";

/**
 * An audit entry has a byte cap (AUDIT_ENTRY_MAX_BYTES), whatever a worker or an operator sends:
 * text they chose is cut (and ends in "…"), a long namespace list is summarised (the first names,
 * then namespacesOmitted), a name scope is judged on that is too long is left out, never cut.
 */

let t: TestRedis, pb: TestPinboard, aware: TestPinboard, worker: ChallengeServer, token: string;
useAwareRegistryFixture((f) => ({ t, pb, worker, token, aware } = f));

const MAX_NAMESPACES = 256;
/** The longest namespaces register accepts, as many as it accepts. */
const longNamespaces = (tag: string) =>
  Array.from({ length: MAX_NAMESPACES }, (_, i) => `/${tag}${String(i).padStart(3, "0")}`.padEnd(129, "x"));
const op = (claim = {}) => credential("pinboard:operator", claim, { sub: "ops" });

/** The stream's entries as stored, newest first, with their bytes (field names and values). */
async function stored(key: string): Promise<Array<{ id: string; bytes: number; fields: Record<string, string> }>> {
  const raw = (await t.redis.client.xrevrange(key, "+", "-")) as Array<[string, string[]]>;
  return raw.map(([id, list]) => {
    const fields: Record<string, string> = {};
    for (let i = 0; i + 1 < list.length; i += 2) fields[list[i]!] = list[i + 1]!;
    return { id, bytes: list.reduce((sum, s) => sum + Buffer.byteLength(s), 0), fields };
  });
}

describe("the entry cap: a register with the longest list register accepts", () => {
  it("writes one worker.registered under the cap, listing the first names and counting the rest", async () => {
    const namespaces = longNamespaces("a");
    const body = registerBody(worker, { namespaces, clientId: "é".repeat(256) });
    const { sessionId } = await registerOk(pb, token, body);

    const [entry, ...older] = await stored("pinboard:{global}:audit");
    expect(older).toEqual([]);
    expect(entry!.bytes).toBeLessThanOrEqual(AUDIT_ENTRY_MAX_BYTES);
    const target = JSON.parse(entry!.fields.target!) as { namespaces: string[]; namespacesOmitted: number };
    expect(target.namespaces.length).toBeGreaterThan(0);
    expect(target.namespaces).toEqual(namespaces.slice(0, target.namespaces.length));
    expect(target.namespacesOmitted).toBe(MAX_NAMESPACES - target.namespaces.length);

    const [seen] = (await readTrail(pb, await op())).entries;
    expect(seen).toMatchObject({
      type: "worker.registered",
      target: {
        sessionId,
        clientId: `${"é".repeat(62)}…`,
        namespaces: target.namespaces,
        namespacesOmitted: target.namespacesOmitted,
      },
      detail: { advertiseUrl: worker.url },
    });
    // 62 two-byte characters and the three bytes of "…": within the 128 bytes of a clientId.
    expect(Buffer.byteLength(String(seen?.target.clientId))).toBe(127);
  });

  it("judges scope on the listed names only; only a credential with * is told how many were omitted", async () => {
    const namespaces = longNamespaces("s");
    await registerOk(pb, token, registerBody(worker, { namespaces, clientId: "client-scope" }));
    const ofScope = (entries: Awaited<ReturnType<typeof readTrail>>["entries"]) =>
      entries.filter((e) => e.target.clientId === "client-scope");

    const first = ofScope((await readTrail(pb, await op({ namespaces: [namespaces[0]] }))).entries);
    expect(first.map((e) => e.target)).toEqual([
      { sessionId: expect.any(String), clientId: "client-scope", namespaces: [namespaces[0]] },
    ]);
    const last = ofScope((await readTrail(pb, await op({ namespaces: [namespaces.at(-1)] }))).entries);
    expect(last).toEqual([]);
    const all = ofScope((await readTrail(pb, await op())).entries);
    expect(all[0]?.target.namespacesOmitted).toBeGreaterThan(200);
  });
});

describe("the entry cap in hostname-aware mode, and in the events a script records", () => {
  it("register and its worker.died (written by Lua from the record) both fit, envs for the listed names", async () => {
    const namespaces = longNamespaces("h");
    const env = "e".repeat(253);
    const envs = Object.fromEntries(namespaces.map((ns) => [ns, env]));
    const hostname = "h".repeat(253);
    const { sessionId } = await registerOk(aware, token, registerBody(worker, { namespaces, hostname, envs }));
    // The lease ran out long ago: the sweeper prunes the session and records worker.died.
    const SESSIONS = "aware:{global}:sessions";
    const record = JSON.parse((await t.redis.hget(SESSIONS, sessionId))!) as { expiry: number };
    const expiry = record.expiry - 100_000;
    await t.redis.client.hset(SESSIONS, sessionId, JSON.stringify({ ...record, expiry }));
    await t.redis.client.zadd("aware:{global}:session-expiries", expiry, sessionId);
    const { runSweep } = await import("../../src/sweeper/sweep.ts");
    await runSweep(aware.deps, "entry-cap");

    const entries = await stored("aware:{global}:audit");
    expect(entries.map((e) => e.fields.type)).toEqual(["worker.died", "worker.registered"]);
    for (const entry of entries) {
      expect(entry.bytes, entry.fields.type).toBeLessThanOrEqual(AUDIT_ENTRY_MAX_BYTES);
      const target = JSON.parse(entry.fields.target!) as Record<string, unknown> & { namespaces: string[] };
      const listed = target.namespaces;
      expect(listed.length).toBeGreaterThan(0);
      expect(target).toEqual({
        sessionId,
        clientId: expect.any(String),
        hostname,
        namespaces: namespaces.slice(0, listed.length),
        envs: Object.fromEntries(listed.map((ns) => [ns, env])),
        namespacesOmitted: MAX_NAMESPACES - listed.length,
      });
    }
  });
});

describe("the entry cap against hostile text", () => {
  it("cuts text by its JSON bytes, leaves out a name it would have to cut, and stays under the cap", async () => {
    const warnings: string[] = [];
    const log: Logger = { debug: () => {}, info: () => {}, error: () => {}, warn: (m) => warnings.push(m) };
    const control = "\u0001".repeat(253);
    await recordAudit(
      { ...pb.deps, log },
      {
        kind: "action",
        type: "drain",
        subject: "s/".repeat(500),
        via: "api",
        target: {
          sessionId: "\u0002".repeat(256),
          clientId: "/".repeat(256),
          // Fewer bytes than its cut, more as JSON: each is six.
          id: "\u0003".repeat(100),
          hostname: control,
          namespaces: ["/kept", ...longNamespaces("z")],
          envs: { "/kept": control },
        },
        detail: { deadline: null, note: "x".repeat(5000) },
      },
    );
    expect(warnings).toEqual([]);
    const [entry] = await stored("pinboard:{global}:audit");
    expect(entry!.bytes).toBeLessThanOrEqual(AUDIT_ENTRY_MAX_BYTES);
    const target = JSON.parse(entry!.fields.target!) as Record<string, unknown> & { namespaces: string[] };
    expect(target.hostname).toBeUndefined();
    expect(target.envs).toBeUndefined();
    expect(target.namespaces[0]).toBe("/kept");
    expect(target.namespacesOmitted).toBe(MAX_NAMESPACES + 1 - target.namespaces.length);
    expect(String(target.clientId)).toMatch(/^\/+…$/);
    expect(target.id).toBe(`${"\u0003".repeat(42)}…`);
    const sessionId = String(target.sessionId);
    expect([sessionId.at(-1), new Set(sessionId.slice(0, -1))]).toEqual(["…", new Set(["\u0002"])]);
    expect(entry!.fields.subject).toMatch(/^(s\/)+s?…$/);
    const detail = JSON.parse(entry!.fields.detail!) as Record<string, unknown>;
    expect(detail).toEqual({ deadline: null, note: `${"x".repeat(125)}…` });
  });
});
