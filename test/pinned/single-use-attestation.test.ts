import { describe, expect, it } from "vitest";
import WebSocket from "ws";
import { createWorker } from "../../src/pinned/index.ts";
import {
  attestation,
  attestationWithoutId,
  type LocalWorker,
  SECRET,
  startLocalWorker,
  useLocalWorkers,
} from "../support/local-worker.ts";
import { Counter } from "../support/sample-instances.ts";

/**
 * Each attestation is accepted once: the worker library remembers its jti until the token
 * expires and answers a second use, with the same body or another, 403 {"detail":"invalid
 * attestation"} (an upgrade: close 1008). Local workers, not registered: attestations for
 * LOCAL_AUD signed with SECRET; the end-to-end case through Pinboard is in
 * pinboard-attestation.test.ts.
 */

let w: LocalWorker;
let strict: LocalWorker;
useLocalWorkers({ w: {}, strict: { requireBoundAttestation: true } }, (started) => ({ w, strict } = started));

const INVALID = { status: 403, body: { detail: "invalid attestation" } };
const answer = async (res: Response) => ({ status: res.status, body: (await res.json()) as unknown });
const nowS = () => Date.now() / 1000;

describe("an attestation used twice", () => {
  it("is refused the second time, with the same body or another; a fresh one passes", async () => {
    const token = await attestation({ htm: "POST", htu: "/counter/u1/increment", epoch: "10" });
    const post = (worker: LocalWorker, body: string, t = token) =>
      worker.call("/counter/u1/increment", { method: "POST", attestation: t, body });
    expect(await answer(await post(w, "one"))).toMatchObject({ status: 200, body: { count: 1 } });
    for (const sent of ["one", "another body", ""]) {
      expect({ sent, ...(await answer(await post(w, sent))) }).toEqual({ sent, ...INVALID });
    }
    const fresh = await attestation({ htm: "POST", htu: "/counter/u1/increment", epoch: "10" });
    expect(await answer(await post(w, "two", fresh))).toMatchObject({ status: 200, body: { count: 2 } });
  });

  it("is served once of two sent at the same moment", async () => {
    const token = await attestation({ htm: "GET", htu: "/counter/u2", epoch: "10" });
    const statuses = await Promise.all(
      Array.from({ length: 6 }, () => w.call("/counter/u2", { attestation: token }).then((res) => res.status)),
    );
    expect(statuses.sort()).toEqual([200, 403, 403, 403, 403, 403]);
  });

  it("is refused on _pinned/stats the second time", async () => {
    const token = await attestation({ htm: "GET", htu: "/_pinned/stats" });
    const stats = () => fetch(`${w.url}/_pinned/stats`, { headers: { "Pinboard-Attestation": token } });
    expect((await stats()).status).toBe(200);
    expect(await answer(await stats())).toEqual(INVALID);
  });

  it("closes a second WebSocket upgrade with 1008", async () => {
    const token = await attestation({ htm: "GET", htu: "/room/u3?name=ann", epoch: "1" });
    const upgrade = () =>
      new Promise<{ first: unknown; close: { code: number; reason: string } }>((resolve) => {
        const ws = new WebSocket(`${w.url.replace("http", "ws")}/room/u3?name=ann`, {
          headers: { "Pinboard-Attestation": token, "Pinboard-Epoch": "1" },
        });
        let first: unknown = null;
        ws.once("message", (data) => {
          first = JSON.parse(String(data));
          ws.close(1000, "done");
        });
        ws.on("close", (code, reason) => resolve({ first, close: { code, reason: reason.toString() } }));
      });
    expect(await upgrade()).toEqual({ first: { hello: "ann", epoch: "1" }, close: { code: 1000, reason: "done" } });
    expect(await upgrade()).toEqual({ first: null, close: { code: 1008, reason: "invalid attestation" } });
  });
});

describe("an attestation without jti (a Pinboard before single-use ids)", () => {
  it("is accepted by default, each time, and the first one is logged; requireBoundAttestation refuses it", async () => {
    const token = attestationWithoutId({ htm: "GET", htu: "/counter/n1", epoch: "10" });
    const warning = (worker: LocalWorker) =>
      worker.logger.lines.filter((line) => line.startsWith("warn attestation without jti accepted"));
    for (let i = 0; i < 2; i++) {
      expect((await w.call("/counter/n1", { attestation: token })).status).toBe(200);
    }
    expect(warning(w)).toHaveLength(1);
    expect(warning(w)[0]).toContain("set requireBoundAttestation once every Pinboard is upgraded");
    expect(await answer(await strict.call("/counter/n1", { attestation: token }))).toEqual(INVALID);
    expect(warning(strict)).toEqual([]);
  });
});

describe("the memory of ids (attestation.maxRemembered)", () => {
  it("past its bound forgets the earliest-expiring ids and refuses their tokens from then on", async () => {
    const small = await startLocalWorker({ attestation: { maxRemembered: 2 } });
    try {
      const at = (ago: number, id: string) =>
        attestation({ htm: "GET", htu: `/counter/${id}`, epoch: "10", nowSeconds: nowS() - ago });
      const oldest = await at(20, "m1");
      const older = await at(10, "m2");
      const recent = await at(0, "m3");
      for (const [token, id] of [
        [oldest, "m1"],
        [older, "m2"],
        [recent, "m3"],
      ] as const) {
        expect((await small.call(`/counter/${id}`, { attestation: token })).status).toBe(200);
      }
      // Three ids, room for two: the oldest was forgotten, and the floor refuses its replay.
      expect(await answer(await small.call("/counter/m1", { attestation: oldest }))).toEqual(INVALID);
      expect(await answer(await small.call("/counter/m2", { attestation: older }))).toEqual(INVALID);
      expect(await answer(await small.call("/counter/m3", { attestation: recent }))).toEqual(INVALID);
      // A token older than the forgotten one is refused unused; a fresh one passes.
      expect(await answer(await small.call("/counter/m4", { attestation: await at(25, "m4") }))).toEqual(INVALID);
      expect((await small.call("/counter/m4")).status).toBe(200);
      expect(small.logger.lines.some((line) => line.startsWith("warn attestation ids forgotten before"))).toBe(true);
    } finally {
      await small.close();
    }
  });
});

describe("a tighter acceptance (attestation.maxAgeS, attestation.skewS)", () => {
  it("refuses a token past maxAgeS + skewS after its iat, or issued beyond skewS ahead", async () => {
    const tight = await startLocalWorker({ attestation: { maxAgeS: 10, skewS: 5 } });
    try {
      const at = (seconds: number, id: string) =>
        attestation({ htm: "GET", htu: `/counter/${id}`, epoch: "10", nowSeconds: nowS() + seconds });
      expect((await tight.call("/counter/t1", { attestation: await at(-13, "t1") })).status).toBe(200);
      expect(await answer(await tight.call("/counter/t2", { attestation: await at(-16, "t2") }))).toEqual(INVALID);
      expect(await answer(await tight.call("/counter/t3", { attestation: await at(7, "t3") }))).toEqual(INVALID);
      // The contract's defaults accept both.
      expect((await w.call("/counter/t2", { attestation: await at(-16, "t2") })).status).toBe(200);
      expect((await w.call("/counter/t3", { attestation: await at(7, "t3") })).status).toBe(200);
    } finally {
      await tight.close();
    }
  });

  it("takes values within the contract's only, and says which option is wrong", () => {
    const base = {
      pinboardUrl: "http://127.0.0.1:9",
      credential: "unused",
      secret: SECRET,
      namespaces: { "/counter": Counter },
    };
    const cases: [object, string][] = [
      [{ maxAgeS: 0 }, "createWorker: attestation.maxAgeS must be a number above 0 to 30, not 0"],
      [{ maxAgeS: 31 }, "createWorker: attestation.maxAgeS must be a number above 0 to 30, not 31"],
      [{ maxAgeS: Number.NaN }, "createWorker: attestation.maxAgeS must be a number above 0 to 30, not NaN"],
      [{ skewS: -1 }, "createWorker: attestation.skewS must be a number from 0 to 30, not -1"],
      [{ skewS: 30.5 }, "createWorker: attestation.skewS must be a number from 0 to 30, not 30.5"],
      [{ skewS: "5" }, "createWorker: attestation.skewS must be a number from 0 to 30, not 5"],
      [{ maxRemembered: 0 }, "createWorker: attestation.maxRemembered must be a positive integer, not 0"],
      [{ maxRemembered: 2.5 }, "createWorker: attestation.maxRemembered must be a positive integer, not 2.5"],
    ];
    for (const [attestationOptions, message] of cases) {
      expect(() => createWorker({ ...base, attestation: attestationOptions })).toThrow(new RangeError(message));
    }
    for (const ok of [{ maxAgeS: 30, skewS: 30 }, { maxAgeS: 0.5, skewS: 0 }, { maxRemembered: 1 }, {}]) {
      expect(() => createWorker({ ...base, attestation: ok })).not.toThrow();
    }
  });
});
