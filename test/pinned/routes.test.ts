import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { attestation, LOCAL_AUD, type LocalWorker, SECRET, startLocalWorker } from "../support/local-worker.ts";

/** The parts of a worker's GET /_pinned/stats answer the tests read. */
interface PinnedStats {
  process: { uptimeMs: number; rssBytes: number };
  namespaces: Record<string, { instances: number }>;
  instances: unknown[];
}

let w: LocalWorker;
beforeAll(async () => {
  w = await startLocalWorker();
});
afterAll(() => w.close());

const nowS = () => Date.now() / 1000;

describe("attestation on the data plane", () => {
  it("serves a request with a valid attestation and epoch", async () => {
    const res = await w.call("/counter/a1/some/path?q=1");
    expect(res.status).toBe(200);
    expect(await res.json()).toMatchObject({ ns: "/counter", id: "a1", path: "/some/path", epoch: "10", count: 0 });
  });

  it("gives the instance the attestation claims", async () => {
    const token = await attestation({ caller: "/room/r1", depth: 3, ...naming("GET", "/counter/a1/whoami", "10") });
    const res = await w.call("/counter/a1/whoami", { attestation: token });
    expect(await res.json()).toMatchObject({ aud: LOCAL_AUD, caller: "/room/r1", depth: 3 });
  });

  const naming = (htm: string, htu: string, epoch: string) => ({ htm, htu, epoch });
  /** An attestation naming GET /counter/a1 at epoch 10, as the calls below make it. */
  const forA1 = (options: Parameters<typeof attestation>[0]) =>
    attestation({ ...naming("GET", "/counter/a1", "10"), ...options });
  const refused: [string, () => Promise<string | null>][] = [
    ["missing", async () => null],
    ["garbage", async () => "not.a.jws"],
    ["signed with another secret (forged)", () => forA1({ secret: "another-secret-0123456789abcdef" })],
    ["for another audience", () => forA1({ aud: "someone-else" })],
    ["expired beyond the 30 s skew", () => forA1({ nowSeconds: nowS() - 61 })],
    // Well beyond the skew: iat is floored and the worker's clock moves on between mint and check.
    ["issued in the future beyond the skew", () => forA1({ nowSeconds: nowS() + 40 })],
  ];
  for (const [name, token] of refused) {
    it(`answers 403 invalid attestation for an attestation ${name}`, async () => {
      const res = await w.call("/counter/a1", { attestation: await token() });
      expect(res.status).toBe(403);
      expect(await res.json()).toEqual({ detail: "invalid attestation" });
    });
  }

  it("accepts an attestation expired by less than the 30 s skew", async () => {
    const res = await w.call("/counter/a1", { attestation: await forA1({ nowSeconds: nowS() - 50 }) });
    expect(res.status).toBe(200);
  });

  it("checks the attestation before anything else", async () => {
    const res = await w.call("/nope/a1", { attestation: null, epoch: "x" });
    expect(res.status).toBe(403);
    expect(await res.json()).toEqual({ detail: "invalid attestation" });
  });
});

describe("placement epoch header", () => {
  for (const epoch of ["abc", "-1", "1.5", "", "1e3", "0x10", "12a", "+5"]) {
    it(`answers 400 malformed placement epoch for ${JSON.stringify(epoch)}`, async () => {
      // No epoch claim can name a malformed epoch: an attestation that names no request gets here.
      const res = await w.call("/counter/a2", { epoch, attestation: await attestation() });
      expect(res.status).toBe(400);
      expect(await res.json()).toEqual({ detail: "malformed placement epoch" });
    });
  }

  it("answers 400 malformed placement epoch when the header is missing", async () => {
    const res = await w.call("/counter/a2", { epoch: null });
    expect(res.status).toBe(400);
    expect(await res.json()).toEqual({ detail: "malformed placement epoch" });
  });

  it("accepts epochs beyond 2^53", async () => {
    const res = await w.call("/counter/big", { epoch: "123456789012345678901234567890" });
    expect(res.status).toBe(200);
    expect(await res.json()).toMatchObject({ epoch: "123456789012345678901234567890" });
  });
});

describe("routing", () => {
  it("answers 404 unknown namespace", async () => {
    const res = await w.call("/nope/a1");
    expect(res.status).toBe(404);
    expect(await res.json()).toEqual({ detail: "unknown namespace" });
  });

  it("answers 400 text/plain for an id outside [A-Za-z0-9._~-]", async () => {
    const res = await w.call("/counter/a%20b");
    expect(res.status).toBe(400);
    expect(res.headers.get("content-type")).toMatch(/^text\/plain/);
  });

  it("answers 404 not found for a path without an id", async () => {
    const res = await w.call("/counter");
    expect(res.status).toBe(404);
    expect(await res.json()).toEqual({ detail: "not found" });
  });
});

describe("GET /_pinned/challenge", () => {
  it("answers 403 invalid proxy secret without the secret", async () => {
    const res = await fetch(`${w.url}/_pinned/challenge?challenge=x`);
    expect(res.status).toBe(403);
    expect(await res.json()).toEqual({ detail: "invalid proxy secret" });
  });

  it("answers 403 invalid proxy secret for a wrong secret", async () => {
    for (const secret of ["wrong", `${SECRET}x`, SECRET.slice(0, -1), ""]) {
      const res = await fetch(`${w.url}/_pinned/challenge?challenge=x`, {
        headers: { "Pinboard-Proxy-Secret": secret },
      });
      expect(res.status).toBe(403);
      expect(await res.json()).toEqual({ detail: "invalid proxy secret" });
    }
  });

  it("answers 404 unknown challenge with the secret or a valid attestation", async () => {
    const bySecret = await fetch(`${w.url}/_pinned/challenge?challenge=x`, {
      headers: { "Pinboard-Proxy-Secret": SECRET },
    });
    expect(bySecret.status).toBe(404);
    expect(await bySecret.json()).toEqual({ detail: "unknown challenge" });
    const byAttestation = await fetch(`${w.url}/_pinned/challenge?challenge=x`, {
      headers: { "Pinboard-Attestation": await attestation() },
    });
    expect(byAttestation.status).toBe(404);
    expect(await byAttestation.json()).toEqual({ detail: "unknown challenge" });
  });

  it("judges the secret (or attestation) before the challenge: both wrong is 403 invalid proxy secret, never 404", async () => {
    // This worker never registered, so no challenge is its current one: every request below
    // names an unknown challenge. Only the credential decides between 403 and 404.
    const answer = async (res: Response) => ({ status: res.status, body: await res.json() });
    const credentials: Record<string, string>[] = [
      {},
      { "Pinboard-Proxy-Secret": "wrong" },
      { "Pinboard-Proxy-Secret": `${SECRET}x` },
      { "Pinboard-Attestation": await attestation({ aud: "someone-else" }) },
      { "Pinboard-Attestation": await attestation({ secret: "another-secret-0123456789abcdef" }) },
    ];
    for (const headers of credentials) {
      for (const query of ["?challenge=stale", "?challenge=", ""]) {
        expect(
          await answer(await fetch(`${w.url}/_pinned/challenge${query}`, { headers })),
          `${JSON.stringify(headers)} ${query}`,
        ).toEqual({ status: 403, body: { detail: "invalid proxy secret" } });
      }
    }
    // The same unknown challenges with the right secret get past it, to the challenge lookup.
    for (const query of ["?challenge=stale", "?challenge=", ""]) {
      expect(
        await answer(
          await fetch(`${w.url}/_pinned/challenge${query}`, { headers: { "Pinboard-Proxy-Secret": SECRET } }),
        ),
        query,
      ).toEqual({ status: 404, body: { detail: "unknown challenge" } });
    }
  });
});

describe("GET /_pinned/stats", () => {
  it("answers 403 invalid attestation without a valid one", async () => {
    for (const token of [null, await attestation({ aud: "other" }), await attestation({ secret: "x".repeat(32) })]) {
      const headers: Record<string, string> = token ? { "Pinboard-Attestation": token } : {};
      const res = await fetch(`${w.url}/_pinned/stats`, { headers });
      expect(res.status).toBe(403);
      expect(await res.json()).toEqual({ detail: "invalid attestation" });
    }
  });

  it("reports draining, lease flaps, re-registrations, process, namespaces and instances", async () => {
    await w.call("/counter/s1");
    const res = await fetch(`${w.url}/_pinned/stats`, { headers: { "Pinboard-Attestation": await attestation() } });
    expect(res.status).toBe(200);
    const stats = (await res.json()) as PinnedStats;
    expect(stats).toMatchObject({ draining: false, leaseFlaps: 0, reregistrations: 0 });
    expect(stats.process.uptimeMs).toBeGreaterThan(0);
    expect(stats.process.rssBytes).toBeGreaterThan(0);
    expect(Object.keys(stats.namespaces).sort()).toEqual(["/counter", "/room", "/slow"]);
    expect(stats.namespaces["/counter"]?.instances).toBeGreaterThanOrEqual(1);
    expect(stats.instances).toContainEqual(expect.objectContaining({ ns: "/counter", id: "s1", epoch: "10" }));
  });
});

describe("without a durability store", () => {
  it("does not mount _wake: the instance gets the request", async () => {
    const res = await w.call("/counter/w1/_wake", { method: "POST" });
    expect(res.status).toBe(200);
    expect(await res.json()).toMatchObject({ path: "/_wake" });
  });
});
