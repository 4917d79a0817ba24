import { createServer as createHttpServer, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import { type AddressInfo, createServer as createTcpServer, type Server as TcpServer } from "node:net";
import fc from "fast-check";
import { SignJWT } from "jose";
import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
import { type SyncHs256Check, signAttestation, verifyAttestation } from "../../src/contract/attestation.ts";
import { constantTimeEqual } from "../../src/contract/constant-time.ts";
import type { Instance, InstanceContext, RequestContext } from "../../src/pinned/index.ts";
import { nodeHs256Check } from "../../src/pinned/node-hmac.ts";
import { badCredentials } from "../support/bad-credentials.ts";
import { type ChallengeServer, startChallengeServer } from "../support/challenge-server.ts";
import { Echo } from "../support/echo-instance.ts";
import { type Fleet, type FleetWorker, startFleet } from "../support/fleet.ts";
import { credential, startTestPinboard, TEST_PASSPORT_SECRET, type TestPinboard } from "../support/pinboard-app.ts";
import { rawSocketRequest } from "../support/raw-socket.ts";
import { startTestRedis, type TestRedis } from "../support/redis.ts";
import {
  answerElsewhere,
  heartbeatBody,
  registerBody,
  registerBodyRedirectedTo,
  registerOk,
} from "../support/registration.ts";
import { openSocket } from "../support/ws-client.ts";
import { WsProbe } from "../support/ws-instances.ts";

/**
 * The security promises, each against the real thing:
 *   - attestations are bound to one worker (aud) and a short window (exp), and cannot be replayed;
 *   - inbound Pinboard-* headers never reach a worker, whatever their case or count;
 *   - the probe, the stats call and the forwards never follow redirects;
 *   - register refuses advertise URLs outside the credential's hosts and ports before any probe;
 *   - secrets, accounts and credentials never show in a read route, /metrics or a log line;
 *   - secret comparisons are constant-time;
 *   - expired, wrongly signed and alg=none credentials are refused.
 * The fleet part runs the real Node entry (PINBOARD_LOG_LEVEL=debug) with worker-library
 * workers; the registry part an in-process app with a scripted challenge server.
 */

const SECRET_A = "SECRET-ALPHA-9f8e7d6c5b4a39281706f5e4d3c2b1a0";
const SECRET_B = "SECRET-BRAVO-0a1b2c3d4e5f60718293a4b5c6d7e8f9";
const ACCOUNT_A = "ACCOUNT-ZULU-7c1e2a";
const ACCOUNT_B = "ACCOUNT-YANKEE-4d9b3f";
const WRONG_SECRET = "WRONG-SECRET-3e2d1c0b9a8f7e6d5c4b3a291807";

/** A worker that answers `?code=N&to=URL` with that redirect (which Pinboard must relay, not follow). */
class Redirect implements Instance {
  constructor(readonly ctx: InstanceContext) {}
  async fetch(request: Request, _ctx: RequestContext): Promise<Response> {
    const url = new URL(request.url);
    if (request.body) await request.arrayBuffer();
    return new Response(null, {
      status: Number(url.searchParams.get("code") ?? 302),
      headers: { location: url.searchParams.get("to") ?? "/" },
    });
  }
}

/** An HTTP listener that records every request (the target a redirect points at). */
async function recorder(): Promise<{ url: string; hits: string[]; close(): Promise<void> }> {
  const hits: string[] = [];
  const server = createHttpServer((req, res) => {
    hits.push(`${req.method} ${req.url}`);
    res.writeHead(200, { "content-type": "application/json" }).end('{"value":"followed"}');
  });
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    hits,
    close: () =>
      new Promise<void>((r) => {
        server.closeAllConnections();
        server.close(() => r());
      }),
  };
}

interface Echoed {
  headers: Record<string, string>;
  epoch: string;
  body?: string;
  attestation: { aud: string; caller?: string; depth?: number };
}

// =============================================================================================
// The real Node entry with worker-library workers

describe("on the Node entry with real workers", () => {
  let fleet: Fleet, a: FleetWorker, b: FleetWorker, target: Awaited<ReturnType<typeof recorder>>;
  const url = (path: string) => `${fleet.pb.url}${path}`;
  let operator: string;

  beforeAll(async () => {
    fleet = await startFleet({
      workers: 0,
      env: {
        PINBOARD_LOG_LEVEL: "debug",
        PINBOARD_DATA_PLANE_RULES: JSON.stringify({ "/secure": { scopes: ["data:use"] } }),
      },
    });
    await fleet.skipColdStart();
    const namespaces = { "/echo": Echo, "/ws": WsProbe, "/secure": Echo };
    a = await fleet.addWorker({
      namespaces,
      secret: SECRET_A,
      clientId: "client-a",
      credential: await fleet.pb.workerCredential({}, { sub: "sub-a", account: ACCOUNT_A }),
    });
    b = await fleet.addWorker({
      namespaces,
      secret: SECRET_B,
      clientId: "client-b",
      credential: await fleet.pb.workerCredential({}, { sub: "sub-b", account: ACCOUNT_B }),
    });
    await fleet.addWorker({ namespaces: { "/redir": Redirect } });
    target = await recorder();
    operator = await fleet.pb.operatorCredential();
  }, 60_000);
  afterAll(async () => {
    await target?.close();
    await fleet?.close();
  });

  /** Places `id` through Pinboard and answers which of a and b owns it, and the other. */
  async function placed(id: string): Promise<{ owner: FleetWorker; other: FleetWorker; echoed: Echoed }> {
    const res = await fetch(url(`/echo/${id}`));
    expect(res.status).toBe(200);
    const echoed = (await res.json()) as Echoed;
    const owner = echoed.attestation.aud === a.worker.sessionId ? a : b;
    expect(echoed.attestation.aud).toBe(owner.worker.sessionId);
    return { owner, other: owner === a ? b : a, echoed };
  }

  const direct = (w: FleetWorker, path: string, headers: Record<string, string>) =>
    fetch(`${w.listening.url}${path}`, { headers });
  const nowS = () => Math.floor(Date.now() / 1000);

  describe("attestations cannot be replayed", () => {
    it("one captured from a forward to A is refused by B, and one signed for A (aud) is refused by B", async () => {
      const { owner, other, echoed } = await placed("replay-1");
      const captured = echoed.headers["pinboard-attestation"]!;
      const epoch = echoed.headers["pinboard-epoch"]!;

      // Replayed verbatim to the other worker: its aud is the owner's session.
      let res = await direct(other, "/echo/replay-1", { "pinboard-attestation": captured, "pinboard-epoch": epoch });
      expect(res.status).toBe(403);
      expect(await res.json()).toEqual({ detail: "invalid attestation" });

      // Built for A (A's secret, A's aud) and sent straight to B.
      const sign = (secret: string, aud: string, htu = "/echo/replay-1", withEpoch: string | null = epoch) =>
        signAttestation(secret, { aud, htm: "GET", htu, epoch: withEpoch ?? undefined }, nowS());
      const forOwner = await sign(owner.worker.secret, owner.worker.sessionId!);
      res = await direct(other, "/echo/replay-1", { "pinboard-attestation": forOwner, "pinboard-epoch": epoch });
      expect(res.status).toBe(403);
      expect(await res.json()).toEqual({ detail: "invalid attestation" });
      // B's own key but A's audience: the aud check alone refuses it.
      const wrongAud = await sign(other.worker.secret, owner.worker.sessionId!);
      res = await direct(other, "/echo/replay-1", { "pinboard-attestation": wrongAud, "pinboard-epoch": epoch });
      expect(res.status).toBe(403);
      expect(await res.json()).toEqual({ detail: "invalid attestation" });
      // The same token shape for B's own audience is accepted: the refusals above are about aud/key.
      const forOther = await sign(other.worker.secret, other.worker.sessionId!);
      res = await direct(other, "/echo/replay-1", { "pinboard-attestation": forOther, "pinboard-epoch": epoch });
      expect(res.status).toBe(200);

      // Stats and the WebSocket path judge the audience the same way.
      const statsFor = (w: FleetWorker) => sign(w.worker.secret, w.worker.sessionId!, "/_pinned/stats", null);
      const stats = await direct(other, "/_pinned/stats", { "pinboard-attestation": await statsFor(owner) });
      expect(stats.status).toBe(403);
      expect(await stats.json()).toEqual({ detail: "invalid attestation" });
      expect((await direct(other, "/_pinned/stats", { "pinboard-attestation": await statsFor(other) })).status).toBe(
        200,
      );
      const ws = await openSocket(`${other.listening.url}/ws/replay-ws`, {
        headers: {
          "pinboard-attestation": await sign(owner.worker.secret, owner.worker.sessionId!, "/ws/replay-ws"),
          "pinboard-epoch": epoch,
        },
      });
      expect(await ws.closed).toMatchObject({ code: 1008 });
    });

    it("an attestation past exp (+30 s skew) or issued in the future is refused by its own worker", async () => {
      const { owner, echoed } = await placed("expiry-1");
      const epoch = echoed.headers["pinboard-epoch"]!;
      const at = (iat: number, htu = "/echo/expiry-1") =>
        signAttestation(owner.worker.secret, { aud: owner.worker.sessionId!, htm: "GET", htu, epoch }, iat);
      // exp = iat + 30; refused once now ≥ exp + 30.
      for (const iat of [nowS() - 61, nowS() - 3600]) {
        const res = await direct(owner, "/echo/expiry-1", {
          "pinboard-attestation": await at(iat),
          "pinboard-epoch": epoch,
        });
        expect(res.status, `iat ${nowS() - iat} s ago`).toBe(403);
        expect(await res.json(), `iat ${nowS() - iat} s ago`).toEqual({ detail: "invalid attestation" });
      }
      const future = await direct(owner, "/echo/expiry-1", {
        "pinboard-attestation": await at(nowS() + 120),
        "pinboard-epoch": epoch,
      });
      expect(future.status).toBe(403);
      expect(await future.json()).toEqual({ detail: "invalid attestation" });
      // Inside the window it is accepted (so the refusals are about time).
      const fresh = await direct(owner, "/echo/expiry-1", {
        "pinboard-attestation": await at(nowS() - 20),
        "pinboard-epoch": epoch,
      });
      expect(fresh.status).toBe(200);
      // And the same expired token as a WebSocket handshake is closed 1008.
      const ws = await openSocket(`${owner.listening.url}/ws/expiry-ws`, {
        headers: { "pinboard-attestation": await at(nowS() - 3600, "/ws/expiry-ws"), "pinboard-epoch": epoch },
      });
      expect(await ws.closed).toMatchObject({ code: 1008 });
    });

    it.each([
      ["Web Crypto", (_secret: string): SyncHs256Check | undefined => undefined],
      ["the worker library's node:crypto check", nodeHs256Check],
    ])(
      "verifyAttestation with %s refuses alg none, another typ, a tampered payload or signature and a wrong aud",
      async (_name, checkFor) => {
        const now = nowS();
        const verify = (token: string, secret: string, aud: string) =>
          verifyAttestation(token, secret, aud, now, checkFor(secret));
        const token = await signAttestation(SECRET_A, { aud: "s-1" }, now);
        expect(await verify(token, SECRET_A, "s-1")).toMatchObject({ aud: "s-1" });
        expect(await verify(token, SECRET_A, "s-2")).toBeNull();
        expect(await verify(token, SECRET_B, "s-1")).toBeNull();
        const [head, payload, signature] = token.split(".") as [string, string, string];
        const enc = (o: unknown) => Buffer.from(JSON.stringify(o)).toString("base64url");
        expect(await verify(`${enc({ alg: "none", typ: "pinboard+jwt" })}.${payload}.`, SECRET_A, "s-1")).toBeNull();
        expect(
          await verify(`${enc({ alg: "none", typ: "pinboard+jwt" })}.${payload}.${signature}`, SECRET_A, "s-1"),
        ).toBeNull();
        expect(
          await verify(`${enc({ alg: "HS256", typ: "JWT" })}.${payload}.${signature}`, SECRET_A, "s-1"),
        ).toBeNull();
        const tampered = `${head}.${enc({ aud: "s-1", iat: now, exp: now + 3600 })}.${signature}`;
        expect(await verify(tampered, SECRET_A, "s-1")).toBeNull();
        expect(await verify(`${head}.${payload}.`, SECRET_A, "s-1")).toBeNull();
        // One bit of the MAC flipped, the MAC cut short by a byte, and 33 bytes: refused, never thrown.
        const mac = Buffer.from(signature, "base64url");
        const flipped = Buffer.from(mac);
        flipped[31] = flipped[31]! ^ 1;
        for (const bad of [flipped, mac.subarray(0, 31), Buffer.concat([mac, Buffer.from([0])])]) {
          expect(await verify(`${head}.${payload}.${bad.toString("base64url")}`, SECRET_A, "s-1")).toBeNull();
        }
      },
    );
  });

  describe("inbound Pinboard-* headers never reach a worker", () => {
    const FORGED: Array<[string, string]> = [
      ["Pinboard-Attestation", "forged.attestation.value"],
      ["PINBOARD-EPOCH", "1"],
      ["pinboard-epoch", "2"],
      ["Pinboard-Proxy-Secret", SECRET_A],
      ["pInBoArD-aNyThInG", "x"],
      ["Pinboard-Anything", "y"],
      ["Pinboard-Anything", "z"],
      ["Pinboard-", "empty-suffix"],
      ["Pinboard-Acct", '{"sub":"admin"}'],
      ["Pinboard-Caller", "/echo/admin"],
      ["Pinboard-Depth", "0"],
      ["PINBOARD-ATTESTATION", "second.forged.value"],
    ];

    const pinboardHeaders = (headers: Record<string, string>) =>
      Object.keys(headers)
        .filter((k) => k.toLowerCase().startsWith("pinboard-"))
        .sort();

    it("every variant, in any case and repeated, is dropped; the worker sees only the attestation and epoch Pinboard minted", async () => {
      const res = await rawSocketRequest(fleet.pb.url, { path: "/echo/headers-1", headers: FORGED });
      expect(res.status).toBe(200);
      const body = JSON.parse(res.body) as Echoed;
      expect(pinboardHeaders(body.headers)).toEqual(["pinboard-attestation", "pinboard-epoch"]);
      const owner = body.attestation.aud === a.worker.sessionId ? a : b;
      expect(
        await verifyAttestation(body.headers["pinboard-attestation"]!, owner.worker.secret, owner.worker.sessionId!),
      ).not.toBeNull();
      expect(body.headers["pinboard-epoch"]).toBe(body.epoch);
      expect(body.headers["pinboard-epoch"]).not.toMatch(/^[12]$|,/);
      expect(JSON.stringify(body.headers)).not.toContain("forged");
      expect(JSON.stringify(body.headers)).not.toContain(SECRET_A);
      // Responses lose Pinboard-* as well (Echo sets pinboard-secret-leak).
      expect(res.headers.map(([n]) => n.toLowerCase())).not.toContain("pinboard-secret-leak");
    });

    it("a POST to _alarm through Pinboard carries no Pinboard-Proxy-Secret, so the worker refuses it", async () => {
      await placed("alarm-1");
      const res = await rawSocketRequest(fleet.pb.url, {
        method: "POST",
        path: "/echo/alarm-1/_alarm",
        headers: [
          ["Pinboard-Proxy-Secret", SECRET_A],
          ["pinboard-proxy-secret", SECRET_B],
        ],
      });
      expect(res.status).toBe(403);
      expect(JSON.parse(res.body)).toEqual({ detail: "invalid proxy secret" });
    });

    it("a verified caller's session, secret, from and depth headers are consumed, never forwarded", async () => {
      const { owner } = await placed("caller-src");
      const res = await rawSocketRequest(fleet.pb.url, {
        path: "/echo/caller-dst",
        headers: [
          ["PINBOARD-FROM", "/echo/caller-src"],
          ["pinboard-session", owner.worker.sessionId!],
          ["Pinboard-Session-Secret", owner.worker.secret],
          ["Pinboard-Subrequest-Depth", "3"],
          ["Pinboard-Extra", "x"],
          ["pinboard-extra", "y"],
        ],
      });
      expect(res.status).toBe(200);
      const body = JSON.parse(res.body) as Echoed;
      expect(pinboardHeaders(body.headers)).toEqual(["pinboard-attestation", "pinboard-epoch"]);
      expect(body.attestation).toMatchObject({ caller: "/echo/caller-src", depth: 3 });
      expect(JSON.stringify(body.headers)).not.toContain(owner.worker.secret);
    });

    it("a WebSocket upgrade with Pinboard-* headers in mixed case reaches the worker without them", async () => {
      const socket = await openSocket(url("/ws/headers-ws"), {
        headers: {
          "Pinboard-Attestation": "forged",
          "PINBOARD-EPOCH": "1",
          "pinboard-session-x": "x",
          "PinBoard-Proxy-Secret": SECRET_B,
        },
      });
      const hello = await socket.json<{ headers: Record<string, string> }>();
      expect(pinboardHeaders(hello.headers)).toEqual(["pinboard-attestation", "pinboard-epoch"]);
      expect(hello.headers["pinboard-attestation"]).not.toBe("forged");
      expect(hello.headers["pinboard-epoch"]).not.toBe("1");
      expect(JSON.stringify(hello.headers)).not.toContain(SECRET_B);
      socket.ws.close();
      await socket.closed;
    });
  });

  describe("forwards never follow redirects", () => {
    for (const code of [301, 302, 303, 307, 308]) {
      it(`a worker's ${code} is relayed to the client, and its target never sees a request`, async () => {
        const to = `${target.url}/followed-${code}`;
        for (const method of ["GET", "POST"]) {
          const res = await fetch(url(`/redir/r-${code}?code=${code}&to=${encodeURIComponent(to)}`), {
            method,
            redirect: "manual",
            ...(method === "POST" ? { body: "payload" } : {}),
          });
          expect(res.status).toBe(code);
          expect(res.headers.get("location")).toBe(to);
        }
      });
    }
    it("(the redirect target was never contacted)", () => {
      expect(target.hits).toEqual([]);
    });
  });

  describe("secrets, accounts and credentials never leave", () => {
    it("no read route, /metrics or log line carries a worker secret, an account or a credential", {
      timeout: 60_000,
    }, async () => {
      const bodies: Array<[string, string]> = [];
      const read = async (path: string, token = operator) => {
        const res = await fetch(url(path), { headers: { authorization: `Bearer ${token}` } });
        const text = await res.text();
        bodies.push([path, text]);
        return { status: res.status, text };
      };
      const workerToken = await fleet.pb.workerCredential({}, { sub: "sub-a", account: ACCOUNT_A });
      const dataToken = await new SignJWT({ scopes: ["data:use"], account: ACCOUNT_B })
        .setProtectedHeader({ alg: "HS256" })
        .setSubject("data-user")
        .setIssuedAt()
        .setExpirationTime("1h")
        .sign(new TextEncoder().encode(TEST_PASSPORT_SECRET));

      // Traffic of every kind, good and bad, so that every code path that logs gets to.
      const { owner, other } = await placed("leak-1");
      await placed("leak-2");
      await fetch(url("/echo/leak-3"), {
        headers: {
          "pinboard-from": "/echo/leak-1",
          "pinboard-session": owner.worker.sessionId!,
          "pinboard-session-secret": owner.worker.secret,
        },
      });
      await fetch(url("/echo/leak-3"), {
        headers: {
          "pinboard-from": "/echo/leak-1",
          "pinboard-session": owner.worker.sessionId!,
          "pinboard-session-secret": WRONG_SECRET,
        },
      });
      await fetch(url("/echo/leak-3"), {
        headers: {
          "pinboard-from": "/echo/leak-1",
          "pinboard-session": other.worker.sessionId!,
          "pinboard-session-secret": other.worker.secret,
        },
      });
      await fetch(url("/secure/leak-4"), { headers: { authorization: `Bearer ${dataToken}` } });
      await fetch(url("/secure/leak-4"), { headers: { authorization: `Bearer ${workerToken}` } });
      await fetch(url("/secure/leak-4"), { headers: { authorization: "Bearer garbage" } });
      const post = (path: string, body: unknown, token: string) =>
        fetch(url(path), {
          method: "POST",
          headers: { authorization: `Bearer ${token}`, "content-type": "application/json" },
          body: JSON.stringify(body),
        });
      // A register that fails its probe, one with a conflicting client id, a heartbeat of another account's session.
      await post(
        "/registry/register",
        {
          clientId: "client-a",
          secret: WRONG_SECRET,
          namespaces: ["/echo"],
          advertiseUrl: a.listening.url,
          headroom: 1,
          draining: false,
          challenge: "c",
          challengeValue: "v",
        },
        await fleet.pb.workerCredential({}, { sub: "intruder", account: "intruder" }),
      );
      await post(
        "/registry/register",
        {
          clientId: "client-x",
          secret: WRONG_SECRET,
          namespaces: ["/echo"],
          advertiseUrl: "http://127.0.0.1:1",
          headroom: 1,
          draining: false,
          challenge: "c",
          challengeValue: "v",
        },
        workerToken,
      );
      await post(
        "/registry/heartbeat",
        { sessionId: b.worker.sessionId, headroom: 1, draining: false, challenge: "c", challengeValue: "v" },
        workerToken,
      );
      await post(
        "/registry/release",
        [{ sessionId: b.worker.sessionId, namespace: "/echo", id: "leak-1" }],
        workerToken,
      );
      await post(
        "/registry/tag",
        { sessionId: owner.worker.sessionId, namespace: "/echo", id: "leak-1", epoch: "1", tag: "t" },
        owner === a ? workerToken : await fleet.pb.workerCredential({}, { sub: "sub-b", account: ACCOUNT_B }),
      );
      // Operator writes.
      await post("/registry/wind_down", { namespace: "/echo", id: "leak-2", deadline: 60 }, operator);
      await post("/registry/drain", { clientId: "client-b", deadline: null }, operator);
      await post("/registry/undrain", { clientId: "client-b" }, operator);
      // A WebSocket session.
      const socket = await openSocket(url("/ws/leak-ws"));
      await socket.json();
      socket.ws.close();
      await socket.closed;
      // Every read route, with the full operator credential and a narrow one.
      for (const path of [
        "/registry/workers",
        "/registry/overview",
        "/registry/overview?ns=/echo&prefix=leak",
        "/registry/stats",
        "/registry/health",
        "/metrics",
      ]) {
        expect((await read(path)).status, path).toBe(200);
      }
      const narrow = await fleet.pb.operatorCredential({ namespaces: ["/echo"] });
      for (const path of ["/registry/workers", "/registry/overview", "/registry/stats"]) await read(path, narrow);
      // A forward to a worker that went away (logs the failure).
      const gone = await fleet.addWorker({
        namespaces: { "/gone": Echo },
        secret: "SECRET-GONE-aa55aa55aa55aa55aa55",
        credential: await fleet.pb.workerCredential({}, { sub: "sub-g", account: "ACCOUNT-GONE-x1" }),
      });
      await fetch(url("/gone/g-1"));
      await gone.listening.close();
      await fetch(url("/gone/g-1"));
      await new Promise((r) => setTimeout(r, 500)); // let the last log lines arrive

      const output = fleet.pb.output();
      expect(output).toContain("worker registered"); // the debug/info log really is in the output
      expect(output.length).toBeGreaterThan(1000);
      const forbidden = [
        SECRET_A,
        SECRET_B,
        "SECRET-GONE-aa55aa55aa55aa55aa55",
        WRONG_SECRET,
        ACCOUNT_A,
        ACCOUNT_B,
        "ACCOUNT-GONE-x1",
        workerToken,
        operator,
        narrow,
        dataToken,
        TEST_PASSPORT_SECRET,
      ];
      for (const needle of forbidden) {
        for (const [path, body] of bodies) expect(body.includes(needle), `${needle} in ${path}`).toBe(false);
        expect(output.includes(needle), `${needle} in the Pinboard process output`).toBe(false);
      }
      // The bodies did carry the workers (the grep looked at real answers).
      expect(bodies.find(([p]) => p === "/registry/workers")![1]).toContain("client-a");
    });
  });

  describe("constant-time secret comparisons", () => {
    it("a caller session secret differing only in its last or its first byte is refused", async () => {
      const { owner } = await placed("ct-src");
      const secret = owner.worker.secret;
      const flip = (c: string) => (c === "x" ? "y" : "x");
      for (const wrong of [
        `${secret.slice(0, -1)}${flip(secret.at(-1)!)}`,
        `${flip(secret[0]!)}${secret.slice(1)}`,
        secret.slice(0, -1),
        `${secret}x`,
        "",
      ]) {
        const res = await fetch(url("/echo/ct-dst"), {
          headers: {
            "pinboard-from": "/echo/ct-src",
            "pinboard-session": owner.worker.sessionId!,
            "pinboard-session-secret": wrong,
          },
        });
        expect(res.status, JSON.stringify(wrong)).toBe(403);
        expect(await res.json()).toEqual({
          error: wrong === "" ? "caller attestation requires session credentials" : "invalid session secret",
        });
      }
      const right = await fetch(url("/echo/ct-dst"), {
        headers: {
          "pinboard-from": "/echo/ct-src",
          "pinboard-session": owner.worker.sessionId!,
          "pinboard-session-secret": secret,
        },
      });
      expect(right.status).toBe(200);
    });

    it("a proxy secret differing only in its last or its first byte is refused by the worker's challenge route", async () => {
      // The worker library runs in this process: its comparison hashes both secrets (constantTimeEqual).
      const digest = vi.spyOn(crypto.subtle, "digest");
      try {
        for (const wrong of [
          `${SECRET_A.slice(0, -1)}1`,
          `X${SECRET_A.slice(1)}`,
          SECRET_A.slice(0, -1),
          `${SECRET_A}0`,
        ]) {
          digest.mockClear();
          const res = await direct(a, "/_pinned/challenge?challenge=whatever", { "pinboard-proxy-secret": wrong });
          expect(res.status, wrong).toBe(403);
          expect(await res.json()).toEqual({ detail: "invalid proxy secret" });
          const hashed = digest.mock.calls.map(([, data]) => new TextDecoder().decode(data as ArrayBuffer));
          expect(hashed).toEqual(expect.arrayContaining([wrong, SECRET_A]));
        }
      } finally {
        digest.mockRestore();
      }
      // With the right secret the same request gets past the secret check (to the challenge lookup).
      const right = await direct(a, "/_pinned/challenge?challenge=whatever", { "pinboard-proxy-secret": SECRET_A });
      expect(right.status).toBe(404);
      expect(await right.json()).toEqual({ detail: "unknown challenge" });
    });
  });

  describe("refused credentials on /metrics and the data-plane passport", () => {
    it("expired, wrongly signed and alg=none credentials are 401 on /metrics", async () => {
      for (const bad of await badCredentials(["pinboard:operator"])) {
        const res = await fetch(url("/metrics"), { headers: { authorization: `Bearer ${bad.token}` } });
        expect(res.status, bad.name).toBe(401);
        expect(await res.json(), bad.name).toEqual({ error: "unauthorized" });
      }
    });

    it("expired, wrongly signed and alg=none credentials are 401 invalid credential on a passport namespace", async () => {
      for (const bad of await badCredentials(["data:use"])) {
        const res = await fetch(url("/secure/pp-1"), { headers: { authorization: `Bearer ${bad.token}` } });
        expect(res.status, bad.name).toBe(401);
        expect(await res.json(), bad.name).toEqual({ error: "invalid credential" });
      }
      const ok = await fetch(url("/secure/pp-1"), {
        headers: {
          authorization: `Bearer ${await new SignJWT({ scopes: ["data:use"] }).setProtectedHeader({ alg: "HS256" }).setSubject("u").setIssuedAt().setExpirationTime("5m").sign(new TextEncoder().encode(TEST_PASSPORT_SECRET))}`,
        },
      });
      expect(ok.status).toBe(200);
    });
  });
});

// =============================================================================================
// The registry, in-process, with scripted workers

describe("registry (in-process app)", () => {
  let t: TestRedis, pb: TestPinboard, cs: ChallengeServer, token: string;

  beforeAll(async () => {
    t = await startTestRedis();
    pb = await startTestPinboard(t, { PINBOARD_VERIFY_TIMEOUT_MS: "500" });
    cs = await startChallengeServer("registry-secret-0123456789");
    token = await credential("pinboard:worker");
  });
  afterAll(async () => {
    await cs?.close();
    await pb?.close();
    await t?.stop();
  });

  async function unchanged(send: () => Promise<Response>): Promise<Response> {
    const before = await t.snapshot();
    const res = await send();
    expect(await t.snapshot()).toEqual(before);
    return res;
  }

  it("a caller's session secret is compared through SHA-256 digests of both secrets, before anything else of the claim", async () => {
    const { sessionId } = await registerOk(pb, token, registerBody(cs, { clientId: "ct-caller" }));
    const secret = cs.secret;
    const wrong = `${secret.slice(0, -1)}${secret.endsWith("x") ? "y" : "x"}`;
    const call = (given: string) =>
      pb.app.request("/threads/ct-dst", {
        headers: {
          "pinboard-from": "/threads/ct-src",
          "pinboard-session": sessionId,
          "pinboard-session-secret": given,
        },
      });
    const digest = vi.spyOn(crypto.subtle, "digest");
    const hashed = () => digest.mock.calls.map(([, data]) => new TextDecoder().decode(data as ArrayBuffer));
    try {
      for (const given of [wrong, `X${secret.slice(1)}`, secret.slice(0, -1), `${secret}x`]) {
        digest.mockClear();
        const res = await call(given);
        expect({ status: res.status, body: await res.json() }).toEqual({
          status: 403,
          body: { error: "invalid session secret" },
        });
        expect(hashed()).toEqual(expect.arrayContaining([given, secret]));
      }
      // The right secret passes the comparison (the same way) and meets the next check.
      digest.mockClear();
      const res = await call(secret);
      expect({ status: res.status, body: await res.json() }).toEqual({
        status: 403,
        body: { error: "caller placement mismatch" },
      });
      expect(hashed().filter((h) => h === secret)).toHaveLength(2);
    } finally {
      digest.mockRestore();
    }
  });

  describe("no SSRF through register", () => {
    let listener: TcpServer;
    let forbiddenPort: number;
    let connections = 0;
    beforeAll(async () => {
      listener = createTcpServer((socket) => {
        connections++;
        socket.destroy();
      });
      await new Promise<void>((r) => listener.listen(0, "127.0.0.1", r));
      forbiddenPort = (listener.address() as AddressInfo).port;
    });
    afterAll(() => new Promise<void>((r) => listener.close(() => r())));

    const csPort = () => Number(new URL(cs.url).port);

    it("an advertise URL on a port outside allowedPorts is 403 and nothing connects to that port", async () => {
      const narrow = await credential("pinboard:worker", {
        allowedBackendHosts: ["127.0.0.1"],
        allowedPorts: [csPort()],
      });
      for (const advertiseUrl of [
        `http://127.0.0.1:${forbiddenPort}`,
        `http://127.1:${forbiddenPort}`,
        `http://0x7f000001:${forbiddenPort}`,
        `http://2130706433:${forbiddenPort}/`,
      ]) {
        const res = await unchanged(() =>
          pb.call("POST", "/registry/register", { token: narrow, body: registerBody(cs, { advertiseUrl }) }),
        );
        expect(res.status, advertiseUrl).toBe(403);
        expect(await res.json()).toEqual({ error: `advertiseUrl port not allowed: ${forbiddenPort}` });
      }
      const defaultPort = await unchanged(() =>
        pb.call("POST", "/registry/register", {
          token: narrow,
          body: registerBody(cs, { advertiseUrl: "http://127.0.0.1" }),
        }),
      );
      expect(await defaultPort.json()).toEqual({ error: "advertiseUrl port not allowed: 80" });
      expect(connections).toBe(0);
    });

    it("an advertise URL on a host outside allowedBackendHosts is 403 and nothing is probed", async () => {
      const seen = cs.seen.length;
      const elsewhere = await credential("pinboard:worker", { allowedBackendHosts: ["10.11.12.13"] });
      for (const advertiseUrl of [`http://127.0.0.1:${forbiddenPort}`, cs.url, `http://0x7f000001:${forbiddenPort}`]) {
        const res = await unchanged(() =>
          pb.call("POST", "/registry/register", { token: elsewhere, body: registerBody(cs, { advertiseUrl }) }),
        );
        expect(res.status, advertiseUrl).toBe(403);
        expect(await res.json()).toEqual({ error: "backend host not allowed: 127.0.0.1" });
      }
      const byName = await credential("pinboard:worker", { allowedBackendHosts: ["127.0.0.1"] });
      const res = await unchanged(() =>
        pb.call("POST", "/registry/register", {
          token: byName,
          body: registerBody(cs, { advertiseUrl: `http://localhost:${forbiddenPort}` }),
        }),
      );
      expect(await res.json()).toEqual({ error: "backend host not allowed: localhost" });
      expect(connections).toBe(0);
      expect(cs.seen.length).toBe(seen);
    });

    it("userinfo tricks are 400 invalid advertiseUrl, before any probe", async () => {
      for (const advertiseUrl of [
        `http://10.11.12.13:80@127.0.0.1:${forbiddenPort}`,
        `http://user:pass@127.0.0.1:${forbiddenPort}`,
        `http://127.0.0.1:${forbiddenPort}#@10.11.12.13`,
        `http://127.0.0.1:${forbiddenPort}?@10.11.12.13`,
      ]) {
        const res = await unchanged(() =>
          pb.call("POST", "/registry/register", { token, body: registerBody(cs, { advertiseUrl }) }),
        );
        expect(res.status, advertiseUrl).toBe(400);
        expect(((await res.json()) as { error: string }).error).toMatch(/^invalid advertiseUrl: /);
      }
      expect(connections).toBe(0);
    });

    it("a heartbeat under a credential that no longer covers the record's host is 403, without a probe", async () => {
      const { sessionId } = await registerOk(pb, token, registerBody(cs));
      const seen = cs.seen.length;
      const moved = await credential("pinboard:worker", { allowedBackendHosts: ["10.11.12.13"] });
      const res = await unchanged(() =>
        pb.call("POST", "/registry/heartbeat", { token: moved, body: heartbeatBody(cs, sessionId) }),
      );
      expect(res.status).toBe(403);
      expect(cs.seen.length).toBe(seen);
      const portMoved = await credential("pinboard:worker", {
        allowedBackendHosts: ["127.0.0.1"],
        allowedPorts: [forbiddenPort],
      });
      expect(
        (
          await unchanged(() =>
            pb.call("POST", "/registry/heartbeat", { token: portMoved, body: heartbeatBody(cs, sessionId) }),
          )
        ).status,
      ).toBe(403);
      expect(cs.seen.length).toBe(seen);
      expect(connections).toBe(0);
    });
  });

  describe("the probe and the stats call never follow redirects", () => {
    it("register: a redirecting probe is 400 and the redirect target sees nothing", async () => {
      const followed = await startChallengeServer(cs.secret);
      const redirecting = await startChallengeServer(cs.secret);
      try {
        const body = registerBodyRedirectedTo(redirecting, followed);
        const res = await unchanged(() => pb.call("POST", "/registry/register", { token, body }));
        expect(res.status).toBe(400);
        expect(await res.json()).toEqual({ error: "registration probe failed" });
        expect(followed.seen).toEqual([]);
      } finally {
        await followed.close();
        await redirecting.close();
      }
    });

    it("heartbeat: a redirecting probe marks the worker degraded and the target sees nothing", async () => {
      const followed = await startChallengeServer(cs.secret);
      const worker = await startChallengeServer(cs.secret);
      try {
        const { sessionId } = await registerOk(pb, token, registerBody(worker));
        worker.mode = "redirect";
        worker.redirectTo = followed.url;
        const body = heartbeatBody(worker, sessionId);
        answerElsewhere(followed, body);
        const res = await pb.call("POST", "/registry/heartbeat", { token, body });
        expect(res.status).toBe(200);
        expect(await res.json()).toMatchObject({ degraded: true });
        expect(followed.seen).toEqual([]);
      } finally {
        await followed.close();
        await worker.close();
      }
    });

    it("stats: a worker redirecting /_pinned/stats is reported unreachable and the target sees nothing", async () => {
      const target = await recorder();
      const challenges = new Map<string, string>();
      const sneaky: Server = createHttpServer((req: IncomingMessage, res: ServerResponse) => {
        const u = new URL(req.url ?? "/", "http://x");
        if (u.pathname === "/_pinned/challenge" && req.headers["pinboard-proxy-secret"] === cs.secret) {
          res
            .writeHead(200, { "content-type": "application/json" })
            .end(JSON.stringify({ value: challenges.get(u.searchParams.get("challenge") ?? "") }));
          return;
        }
        res.writeHead(307, { location: `${target.url}${req.url}` }).end();
      });
      await new Promise<void>((r) => sneaky.listen(0, "127.0.0.1", r));
      const sneakyUrl = `http://127.0.0.1:${(sneaky.address() as AddressInfo).port}`;
      try {
        const fake = { url: sneakyUrl, secret: cs.secret, challenges } as unknown as ChallengeServer;
        const { sessionId } = await registerOk(
          pb,
          token,
          registerBody(fake, { clientId: "sneaky", namespaces: ["/sneaky"] }),
        );
        const res = await pb.call("GET", "/registry/stats", { token: await credential("pinboard:operator") });
        expect(res.status).toBe(200);
        const entry = ((await res.json()) as { workers: Array<{ sessionId: string; error?: string }> }).workers.find(
          (w) => w.sessionId === sessionId,
        );
        expect(entry).toMatchObject({ error: "unreachable" });
        // The data plane relays the same worker's redirect rather than following it.
        await t.redis.client.set("pinboard:{0}:boot_time", "0");
        for (let bucket = 1; bucket < 16; bucket++) await t.redis.client.set(`pinboard:{${bucket}}:boot_time`, "0");
        const forwarded = await pb.call("GET", "/sneaky/s-1");
        expect(forwarded.status).toBe(307);
        expect(forwarded.headers.get("location")).toBe(`${target.url}/sneaky/s-1`);
        expect(target.hits).toEqual([]);
      } finally {
        await new Promise<void>((r) => {
          sneaky.closeAllConnections();
          sneaky.close(() => r());
        });
        await target.close();
      }
    });
  });

  describe("expired, wrongly signed and alg=none credentials on the registry routes", () => {
    const routes: Array<[string, string, string]> = [
      ["POST", "/registry/register", "pinboard:worker"],
      ["POST", "/registry/heartbeat", "pinboard:worker"],
      ["POST", "/registry/release", "pinboard:worker"],
      ["POST", "/registry/tag", "pinboard:worker"],
      ["POST", "/registry/deregister", "pinboard:worker"],
      ["POST", "/registry/unknown", "pinboard:worker"],
      ["GET", "/registry/health", "pinboard:operator"],
      ["GET", "/registry/workers", "pinboard:operator"],
      ["GET", "/registry/overview", "pinboard:operator"],
      ["GET", "/registry/stats", "pinboard:operator"],
      ["POST", "/registry/wind_down", "pinboard:operator"],
      ["POST", "/registry/drain", "pinboard:operator"],
      ["POST", "/registry/undrain", "pinboard:operator"],
    ];
    for (const [method, path, scope] of routes) {
      it(`${method} ${path}: 401 unauthorized, changing nothing`, async () => {
        await registerOk(pb, token, registerBody(cs, { clientId: "cred-client" }));
        for (const bad of await badCredentials([scope])) {
          const res = await unchanged(() =>
            pb.call(method, path, {
              headers: { authorization: `Bearer ${bad.token}` },
              ...(method === "POST"
                ? {
                    body:
                      path === "/registry/release"
                        ? [{ sessionId: "s", namespace: "/threads", id: "a" }]
                        : { clientId: "cred-client", sessionId: "s", namespace: "/threads", deadline: null },
                  }
                : {}),
            }),
          );
          expect(res.status, bad.name).toBe(401);
          expect(await res.json(), bad.name).toEqual({ error: "unauthorized" });
        }
      });
    }
  });
});

// =============================================================================================
// Secret comparisons, by behaviour. (Which call sites use which helper, and that no secret is
// compared with === anywhere in src, is the source lint's job: npm run lint:source.)

describe("secret comparisons", () => {
  // One comparison serves Pinboard and the worker library (src/contract/constant-time.ts).
  const helpers = [["constantTimeEqual", constantTimeEqual]] as const;
  const utf8 = (s: string) => Array.from(new TextEncoder().encode(s));
  const bytesOf = (data: BufferSource) =>
    Array.from(
      data instanceof ArrayBuffer
        ? new Uint8Array(data)
        : new Uint8Array(data.buffer, data.byteOffset, data.byteLength),
    );

  /** A pair of strings, equal or not, often differing in one place or only in length. */
  const pair = fc.oneof(
    fc.tuple(fc.string({ unit: "grapheme", maxLength: 40 }), fc.string({ unit: "grapheme", maxLength: 40 })),
    fc.string({ unit: "binary", maxLength: 40 }).map((a) => [a, a] as const),
    fc
      .tuple(
        fc.string({ unit: "grapheme-ascii", minLength: 1, maxLength: 40 }),
        fc.nat(),
        fc.string({ unit: "binary", minLength: 1, maxLength: 1 }),
      )
      .map(([a, i, c]) => [a, `${a.slice(0, i % a.length)}${c}${a.slice((i % a.length) + 1)}`] as const),
    fc
      .tuple(fc.string({ maxLength: 40 }), fc.string({ minLength: 1, maxLength: 3 }))
      .map(([a, tail]) => [a, a + tail] as const),
  );

  for (const [name, eq] of helpers) {
    it(`${name} answers exactly string equality, for any two strings`, async () => {
      for (const [x, y] of [
        ["abc", "abc"],
        ["abc", "abd"],
        ["abc", "xbc"],
        ["abc", "abcd"],
        ["", ""],
        ["", "a"],
        ["\u00e9", "e\u0301"],
        [SECRET_A, SECRET_A.slice(0, -1)],
      ] as const) {
        expect(await eq(x, y), `${JSON.stringify(x)} vs ${JSON.stringify(y)}`).toBe(x === y);
      }
      await fc.assert(
        fc.asyncProperty(pair, async ([x, y]) => {
          expect(await eq(x, y)).toBe(x === y);
          expect(await eq(y, x)).toBe(x === y);
        }),
        { numRuns: 300 },
      );
    });

    it(`${name} hashes both inputs in full, whatever their lengths, and decides on the SHA-256 digests alone`, async () => {
      const digest = vi.spyOn(crypto.subtle, "digest");
      try {
        for (const [x, y] of [
          ["short", "a much longer secret than the other one"],
          ["", "x".repeat(5000)],
          [SECRET_A, `X${SECRET_A.slice(1)}`],
        ] as const) {
          digest.mockClear();
          expect(await eq(x, y)).toBe(false);
          // Both inputs went through SHA-256, byte for byte: no length check or prefix comparison first.
          expect(digest.mock.calls.map(([alg, data]) => [alg, bytesOf(data)])).toEqual([
            ["SHA-256", utf8(x)],
            ["SHA-256", utf8(y)],
          ]);
        }
      } finally {
        digest.mockRestore();
      }
    });

    it(`${name} compares every byte of the two digests (no early exit, no partial compare)`, async () => {
      // Digests under the test's control: the answer must follow them, not the inputs.
      const base = Array.from({ length: 32 }, (_, i) => (i * 37 + 11) & 0xff);
      let second = base;
      const digest = vi.spyOn(crypto.subtle, "digest").mockImplementation(async (_alg, data) => {
        const first = bytesOf(data)[0] === "L".charCodeAt(0);
        return new Uint8Array(first ? base : second).buffer;
      });
      try {
        // Equal digests: equal, although the inputs differ in content and length.
        second = base;
        expect(await eq("L-left", "R-right-and-longer")).toBe(true);
        // One differing bit at any of the 32 positions, first to last: unequal.
        for (let i = 0; i < 32; i++) {
          for (const bit of [0x01, 0x80]) {
            second = base.map((v, j) => (j === i ? v ^ bit : v));
            expect(await eq("L-left", "R-right"), `digests differing at byte ${i} (bit ${bit})`).toBe(false);
          }
        }
        // Differing everywhere but one byte, for each byte: still unequal.
        for (let i = 0; i < 32; i++) {
          second = base.map((v, j) => (j === i ? v : v ^ 0xff));
          expect(await eq("L-left", "R-right"), `digests equal only at byte ${i}`).toBe(false);
        }
        expect(digest).toHaveBeenCalled();
      } finally {
        digest.mockRestore();
      }
    });
  }

  it("attestations and Passport credentials are checked with crypto.subtle.verify (HMAC), never by comparing signatures as text", async () => {
    const verify = vi.spyOn(crypto.subtle, "verify");
    try {
      const now = Math.floor(Date.now() / 1000);
      const token = await signAttestation(SECRET_A, { aud: "session-1" }, now);
      expect(await verifyAttestation(token, SECRET_A, "session-1", now)).toMatchObject({ aud: "session-1" });
      const [head, body, sig] = token.split(".") as [string, string, string];
      const flipped = `${head}.${body}.${sig.slice(0, -2)}${sig.endsWith("AA") ? "BA" : "AA"}`;
      expect(await verifyAttestation(flipped, SECRET_A, "session-1", now)).toBeNull();
      expect(await verifyAttestation(token, WRONG_SECRET, "session-1", now)).toBeNull();
      expect(verify.mock.calls.map(([alg]) => (typeof alg === "string" ? alg : alg.name))).toEqual([
        "HMAC",
        "HMAC",
        "HMAC",
      ]);
    } finally {
      verify.mockRestore();
    }
  });
});
