import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { signAttestation } from "../../src/contract/attestation.ts";
import type { PinnedWorker } from "../../src/pinned/index.ts";
import { RETIRED_SESSION_GRACE_MS } from "../../src/pinned/registration.ts";
import { Echo } from "../support/echo-instance.ts";
import { type Fleet, type FleetWorker, startFleet } from "../support/fleet.ts";
import { freshGate } from "../support/gates.ts";
import { until } from "../support/local-worker.ts";
import { Counter } from "../support/sample-instances.ts";

/**
 * Attestations as the real Pinboard Node entry signs them, against the worker library: a
 * forward's attestation replayed on another call is refused, and an attestation for the session
 * a worker held before is accepted for RETIRED_SESSION_GRACE_MS after it lost or gave it up, then
 * never again; one for the session a register under way is about to name waits for its answer.
 */

const LEASE_MS = 3000;
let fleet: Fleet;
let w: FleetWorker;
beforeAll(async () => {
  fleet = await startFleet({
    workers: 0,
    env: { PINBOARD_LEASE_TTL_MS: String(LEASE_MS) },
    namespaces: { "/echo": Echo, "/counter": Counter },
  });
  w = await fleet.addWorker();
  await fleet.skipColdStart();
});
afterAll(() => fleet?.close());

const INVALID = { status: 403, body: { detail: "invalid attestation" } };
const answer = async (res: Response) => ({ status: res.status, body: (await res.json()) as unknown });

describe("a forward's attestation, as Pinboard signs it", () => {
  it("names the forward's method, target and epoch", async () => {
    const res = await fetch(`${fleet.pb.url}/echo/r1/some/path?x=1&y=%27`, { method: "POST", body: "hello" });
    expect(res.status).toBe(200);
    const body = (await res.json()) as { headers: Record<string, string>; attestation: Record<string, unknown> };
    const epoch = body.headers["pinboard-epoch"]!;
    const iat = body.attestation.iat as number;
    expect(body.attestation).toEqual({
      aud: w.worker.sessionId,
      iat,
      exp: iat + 30,
      jti: expect.stringMatching(/^[A-Za-z0-9_-]{22}$/),
      htm: "POST",
      htu: "/echo/r1/some/path?x=1&y=%27",
      epoch,
    });
  });

  it("is signed anew for every forward: the same call twice in a second carries two ids", async () => {
    const jtis = new Set<unknown>();
    for (let i = 0; i < 4; i++) {
      const res = await fetch(`${fleet.pb.url}/echo/r4/same?x=1`);
      expect(res.status).toBe(200);
      jtis.add(((await res.json()) as { attestation: { jti: string } }).attestation.jti);
    }
    expect(jtis.size).toBe(4);
  });

  it("is refused by the worker replayed on another path, method or epoch", async () => {
    const res = await fetch(`${fleet.pb.url}/echo/r2/some/path?x=1`);
    const body = (await res.json()) as { headers: Record<string, string> };
    const token = body.headers["pinboard-attestation"]!;
    const epoch = body.headers["pinboard-epoch"]!;
    const replay = (path: string, init: { method?: string; epoch?: string } = {}) =>
      fetch(`${w.worker.advertiseUrl}${path}`, {
        method: init.method ?? "GET",
        headers: { "Pinboard-Attestation": token, "Pinboard-Epoch": init.epoch ?? epoch },
      });

    for (const [path, init] of [
      ["/echo/r2/other/path?x=1", {}],
      ["/echo/r3/some/path?x=1", {}],
      ["/echo/r2/some/path?x=2", {}],
      ["/echo/r2/some/path?x=1", { method: "DELETE" }],
      ["/echo/r2/some/path?x=1", { epoch: String(BigInt(epoch) + 1n) }],
    ] as const) {
      expect({ path, init, ...(await answer(await replay(path, init))) }).toEqual({ path, init, ...INVALID });
    }
    // Nor on the very call it names: Pinboard's forward used it.
    expect(await answer(await replay("/echo/r2/some/path?x=1"))).toEqual(INVALID);
  });

  it("is refused by the worker replayed on its own call, with the same body or another", async () => {
    const res = await fetch(`${fleet.pb.url}/echo/r5/write?x=1`, { method: "POST", body: "genuine" });
    expect(res.status).toBe(200);
    const body = (await res.json()) as { headers: Record<string, string>; hits: number };
    const headers = {
      "Pinboard-Attestation": body.headers["pinboard-attestation"]!,
      "Pinboard-Epoch": body.headers["pinboard-epoch"]!,
    };
    for (const replayed of ["genuine", "forged body", ""]) {
      const replay = await fetch(`${w.worker.advertiseUrl}/echo/r5/write?x=1`, {
        method: "POST",
        headers,
        body: replayed,
      });
      expect({ replayed, ...(await answer(replay)) }).toEqual({ replayed, ...INVALID });
    }
    // A fresh forward of the same call passes, and the instance saw none of the replays.
    const again = await fetch(`${fleet.pb.url}/echo/r5/write?x=1`, { method: "POST", body: "genuine" });
    expect(again.status).toBe(200);
    expect(await again.json()).toMatchObject({ method: "POST", bodyBytes: 7, hits: body.hits + 1 });
  });
});

describe("a worker that requires bound attestations (requireBoundAttestation)", () => {
  it("gets forwards, and the operator's _pinned/stats call, from Pinboard", async () => {
    const strict = await fleet.addWorker({ requireBoundAttestation: true, namespaces: { "/strict": Echo } });
    try {
      const res = await fetch(`${fleet.pb.url}/strict/s1/x?y=1`, { method: "PUT", body: "z" });
      expect(res.status).toBe(200);
      expect(await res.json()).toMatchObject({ method: "PUT", path: "/x", query: "?y=1", bodyBytes: 1 });

      const operator = await fleet.pb.operatorCredential();
      // Twice in a row: each stats call is signed anew, so the second is no replay of the first.
      for (let i = 0; i < 2; i++) {
        const stats = await fetch(`${fleet.pb.url}/registry/stats`, {
          headers: { authorization: `Bearer ${operator}` },
        });
        const entry = ((await stats.json()) as { workers: { sessionId: string }[] }).workers.find(
          (x) => x.sessionId === strict.worker.sessionId,
        );
        expect(entry).toMatchObject({
          sessionId: strict.worker.sessionId,
          stats: { draining: false, namespaces: { "/strict": {} } },
        });
      }
    } finally {
      await strict.stop();
    }
  });
});

describe("an attestation for the worker's previous session", () => {
  /** A worker whose clock runs `skew.ms` ahead, so a test can step past the grace. */
  async function skewedWorker(
    options: { fetch?: typeof fetch } = {},
  ): Promise<{ entry: FleetWorker; skew: { ms: number } }> {
    const skew = { ms: 0 };
    const entry = await fleet.addWorker({ now: () => Date.now() + skew.ms, ...options });
    return { entry, skew };
  }

  /** GET /_pinned/stats with an attestation for `aud`, signed on the worker's clock. */
  async function statsFor(worker: PinnedWorker, aud: string, skew: { ms: number }): Promise<number> {
    const token = await signAttestation(
      worker.secret,
      { aud, htm: "GET", htu: "/_pinned/stats" },
      (Date.now() + skew.ms) / 1000,
    );
    const res = await fetch(`${worker.advertiseUrl}/_pinned/stats`, { headers: { "Pinboard-Attestation": token } });
    await res.arrayBuffer();
    return res.status;
  }

  it("is accepted for the grace after a re-register, for forwards in flight, and refused after it", async () => {
    const { entry, skew } = await skewedWorker();
    const { worker } = entry;
    const old = worker.sessionId!;
    await fleet.t.flush();
    await until(() => worker.sessionId !== old && worker.sessionId !== null, 10_000);
    const live = worker.sessionId!;
    expect(await statsFor(worker, old, skew)).toBe(200);
    expect(await statsFor(worker, live, skew)).toBe(200);

    skew.ms += RETIRED_SESSION_GRACE_MS + 1000;
    expect(await statsFor(worker, old, skew)).toBe(403);
    expect(await statsFor(worker, live, skew)).toBe(200);
    await entry.stop();
  });

  it("is refused once the grace is over while the re-register keeps failing", async () => {
    // Heartbeats reach Pinboard (and hear that the session is gone); registers never do.
    const cut = { register: false };
    const partial = ((input: RequestInfo | URL, init?: RequestInit) =>
      cut.register && String(input).endsWith("/registry/register")
        ? Promise.reject(new TypeError("fetch failed: partitioned"))
        : fetch(input, init)) as typeof fetch;
    const { entry, skew } = await skewedWorker({ fetch: partial });
    const { worker } = entry;
    const old = worker.sessionId!;
    cut.register = true;
    await fleet.t.flush();
    await until(() => worker.sessionId === null, 10_000);
    expect(await statsFor(worker, old, skew)).toBe(200);

    skew.ms += RETIRED_SESSION_GRACE_MS + 1000;
    expect(await statsFor(worker, old, skew)).toBe(403);
    expect(worker.sessionId).toBeNull();
    await entry.stop();
  });

  it("is refused once the grace is over after the worker deregistered", async () => {
    const { entry, skew } = await skewedWorker();
    const { worker } = entry;
    const old = worker.sessionId!;
    await worker.stop();
    expect(await statsFor(worker, old, skew)).toBe(200);
    skew.ms += RETIRED_SESSION_GRACE_MS + 1000;
    expect(await statsFor(worker, old, skew)).toBe(403);
    await entry.stop();
  });
});

describe("an attestation for the session a register under way is about to name", () => {
  const WAITING = "attestation names a session not known yet: waiting for the register answer";

  /**
   * A worker serving `ns` alone whose register answers, once `hold.on`, wait at `hold.gate` after
   * Pinboard sent them (`failNext` then loses the next one); its info lines land in `lines`.
   */
  async function heldWorker(ns: string) {
    const hold = { on: false, failNext: false, gate: freshGate("register-answer") };
    const lines: string[] = [];
    const held = (async (input: RequestInfo | URL, init?: RequestInit) => {
      const res = await fetch(input, init);
      if (hold.on && String(input).endsWith("/registry/register")) {
        await hold.gate.pass();
        if (hold.failNext) {
          hold.failNext = false;
          throw new TypeError("fetch failed: connection reset");
        }
      }
      return res;
    }) as typeof fetch;
    const logger = { info: (line: string) => lines.push(line), warn: () => {}, error: () => {} };
    const entry = await fleet.addWorker({ fetch: held, logger, namespaces: { [ns]: Echo } });
    return { worker: entry.worker, hold, lines, stop: () => entry.stop() };
  }

  /** Redis loses every session: the next heartbeat hears 409 and re-registers, whose answer is held. */
  async function reregisterHeld(hold: { on: boolean; gate: ReturnType<typeof freshGate> }): Promise<void> {
    hold.on = true;
    await fleet.t.flush();
    await hold.gate.arrived(1);
    await fleet.skipColdStart();
  }

  it("serves a forward Pinboard placed on the new session before the worker heard of it", async () => {
    const { worker, hold, lines, stop } = await heldWorker("/held");
    const old = worker.sessionId!;
    await reregisterHeld(hold);
    expect(worker.sessionId).toBeNull();

    const forward = fetch(`${fleet.pb.url}/held/h1/x?y=1`);
    await until(() => lines.includes(WAITING), 10_000);
    hold.gate.open();
    const res = await forward;
    expect(res.status).toBe(200);
    const body = (await res.json()) as { path: string; query: string; attestation: { aud: string } };
    expect(body).toMatchObject({ path: "/x", query: "?y=1" });
    expect(body.attestation.aud).toBe(worker.sessionId);
    expect(worker.sessionId).not.toBe(old);
    await stop();
  });

  it("refuses, once the answer is in, an attestation naming a session the answer did not bring", async () => {
    const { worker, hold, lines, stop } = await heldWorker("/held2");
    await reregisterHeld(hold);
    const stats = (aud: string) =>
      signAttestation(worker.secret, { aud, htm: "GET", htu: "/_pinned/stats" }, Date.now() / 1000).then((token) =>
        fetch(`${worker.advertiseUrl}/_pinned/stats`, { headers: { "Pinboard-Attestation": token } }),
      );
    const forged = stats("0123456789abcdef");
    await until(() => lines.includes(WAITING), 10_000);
    hold.gate.open();
    expect(await answer(await forged)).toEqual(INVALID);
    expect(worker.sessionId).not.toBeNull();
    expect((await stats(worker.sessionId!)).status).toBe(200);
    await stop();
  });

  it("refuses the waiting forward when the register's answer is lost, and serves once it registers again", async () => {
    const { worker, hold, lines, stop } = await heldWorker("/held3");
    hold.failNext = true;
    await reregisterHeld(hold);
    const forward = fetch(`${fleet.pb.url}/held3/h3`);
    await until(() => lines.includes(WAITING), 10_000);
    hold.gate.open();
    expect(await answer(await forward)).toEqual(INVALID);

    await until(() => worker.sessionId !== null, 10_000);
    await fleet.skipColdStart();
    const res = await fetch(`${fleet.pb.url}/held3/h3`);
    expect(res.status).toBe(200);
    expect(((await res.json()) as { attestation: { aud: string } }).attestation.aud).toBe(worker.sessionId);
    await stop();
  });
});
