import { spawn } from "node:child_process";
import { readFile } from "node:fs/promises";
import { fileURLToPath } from "node:url";
import { gzipSync } from "node:zlib";
import { afterEach, describe, expect, it } from "vitest";
import type { AuditEntry } from "../../../src/audit/entry.ts";
import { AccountTags } from "../../../src/auth/account-tags.ts";
import { mintCredential } from "../../../src/auth/mint.ts";
import { isSealed } from "../../../src/auth/worker-secrets.ts";
import { CONSOLE_CSP, CONSOLE_HTML } from "../../../src/console/assets.generated.ts";
import { Keys } from "../../../src/redis/keys.ts";
import { type ChallengeServer, startChallengeServer } from "../../support/challenge-server.ts";
import { credential, TEST_PASSPORT_SECRET } from "../../support/pinboard-app.ts";
import { startPinboardProcess } from "../../support/pinboard-process.ts";
import type { TestRedis } from "../../support/redis.ts";
import { answerElsewhere, heartbeatBody, registerBody } from "../../support/registration.ts";
import { expectRouteOk } from "../../support/route-answers.ts";
import { bundleWorker, startWorkersEntry, type WorkersEntry } from "../../support/workerd-entry.ts";
import { useWorkersEntryFixture } from "../../support/workers-entry-fixture.ts";

/**
 * The Workers entry (src/cloudflare.ts, bundled) inside workerd through Miniflare, on real HTTP,
 * talking to a real redis-server through the Upstash REST bridge with @upstash/redis.
 */

const ROOT = fileURLToPath(new URL("../../../", import.meta.url));
/** The PINBOARD_* settings of every entry in this file that shares the default prefix. */
const SETTINGS = { PINBOARD_VERIFY_TIMEOUT_MS: "1000", PINBOARD_LOG_LEVEL: "error" };
const SESSIONS = "pinboard:{global}:sessions";

let t: TestRedis;
let wk: WorkersEntry;
let worker: ChallengeServer;
let token: string;

useWorkersEntryFixture(SETTINGS, (f) => ({ t, wk, worker, token } = f));
afterEach(() => {
  worker.mode = "answer";
});

const post = (url: string, auth: string | undefined, body: unknown, headers: Record<string, string> = {}) =>
  fetch(url, {
    method: "POST",
    headers: { ...(auth && { authorization: `Bearer ${auth}` }), "content-type": "application/json", ...headers },
    body: typeof body === "string" ? body : JSON.stringify(body),
  });

async function register(base: string, body = registerBody(worker)): Promise<string> {
  const res = await post(`${base}/registry/register`, token, body);
  const json = (await res.json()) as { sessionId?: string };
  if (res.status !== 200 || !json.sessionId)
    throw new Error(`register answered ${res.status}: ${JSON.stringify(json)}`);
  return json.sessionId;
}

describe("the Workers entry in workerd", () => {
  it("serves /healthz and /readyz (empty body) once it holds the fleet license", async () => {
    const health = await fetch(`${wk.url}/healthz`);
    expect(health.status).toBe(200);
    expect(await health.json()).toEqual({ ok: true });
    const ready = await fetch(`${wk.url}/readyz`);
    expect(ready.status).toBe(200);
    expect(await ready.text()).toBe("");
    expect(JSON.parse((await t.redis.get("pinboard:{global}:license"))!)).toMatchObject({
      shards: 16,
      hostnameAware: false,
    });
  });

  it("serves the operator console and /openapi.json without a credential", async () => {
    const page = await fetch(`${wk.url}/console`);
    expect(page.status).toBe(200);
    expect(page.headers.get("content-security-policy")).toBe(CONSOLE_CSP);
    expect(await page.text()).toBe(CONSOLE_HTML);
    const api = await fetch(`${wk.url}/openapi.json`);
    expect(api.status).toBe(200);
    expect(((await api.json()) as { openapi: string }).openapi).toBe("3.1.0");
  });

  it("stays under 1 MiB gzipped, console and description included", async () => {
    const bundle = await readFile(await bundleWorker());
    expect(gzipSync(bundle).byteLength).toBeLessThan(1024 * 1024);
  });

  it("runs register → heartbeat → tag → release → deregister against a real worker", async () => {
    const body = registerBody(worker);
    const reg = await post(`${wk.url}/registry/register`, token, body);
    expect(reg.status).toBe(200);
    const { sessionId, ...rest } = (await reg.json()) as { sessionId: string };
    expect(rest).toEqual({ expiresInMs: 15000, draining: false });
    const probe = worker.seen.at(-1)!;
    expect(probe.url).toBe(`/_pinned/challenge?challenge=${body.challenge}`);
    expect(probe.headers["pinboard-proxy-secret"]).toBe(worker.secret);
    const stored = JSON.parse((await t.redis.hget(SESSIONS, sessionId))!);
    expect(stored).toMatchObject({
      clientId: body.clientId,
      advertiseUrl: worker.url,
      namespaces: ["/threads"],
      headroom: 100,
    });

    // The account stored as its tag, the very one the Node entry makes under the same key.
    expect(stored.account).toBe(await new AccountTags(TEST_PASSPORT_SECRET).tag("tester"));
    // Stored sealed; the heartbeat's probe carries the secret it opened.
    expect(isSealed(stored.secret)).toBe(true);
    expect(stored.secret).not.toContain(worker.secret);
    const hb = await post(`${wk.url}/registry/heartbeat`, token, heartbeatBody(worker, sessionId, { headroom: 7 }));
    expect(hb.status).toBe(200);
    expect(await hb.json()).toEqual({ expiresInMs: 15000, draining: false });
    expect(worker.seen.at(-1)!.headers["pinboard-proxy-secret"]).toBe(worker.secret);
    expect(JSON.parse((await t.redis.hget("pinboard:{0}:workers", sessionId))!).headroom).toBe(7);

    // A placement row owned by the session (placement itself comes with the resolve routes).
    const keys = new Keys("pinboard:", 16);
    const rowKey = keys.placements(await keys.bucketOf("doc-1"), "*", "/threads");
    await t.redis.client.hset(rowKey, "doc-1", `${sessionId}\n7\n\n\n`);

    const tagged = await post(`${wk.url}/registry/tag`, token, {
      sessionId,
      namespace: "/threads",
      id: "doc-1",
      epoch: "7",
      tag: "ws:1",
    });
    expect(tagged.status).toBe(200);
    expect(await tagged.json()).toEqual({ tagged: true });
    expect(await t.redis.hget(rowKey, "doc-1")).toBe(`${sessionId}\n7\n\n\nws:1`);
    const staleTag = await post(`${wk.url}/registry/tag`, token, {
      sessionId,
      namespace: "/threads",
      id: "doc-1",
      epoch: "6",
      tag: "ws:2",
    });
    expect(await staleTag.json()).toEqual({ tagged: false });

    const staleRelease = await post(`${wk.url}/registry/release`, token, [
      { sessionId, namespace: "/threads", id: "doc-1", epoch: "6" },
    ]);
    expect(staleRelease.status).toBe(200);
    expect(await staleRelease.json()).toEqual({ released: 0 });
    const released = await post(`${wk.url}/registry/release`, token, [
      { sessionId, namespace: "/threads", id: "doc-1", epoch: "7" },
    ]);
    expect(await released.json()).toEqual({ released: 1 });
    expect(await t.redis.hget(rowKey, "doc-1")).toBeNull();

    const dereg = await post(`${wk.url}/registry/deregister`, token, { sessionId });
    expect(dereg.status).toBe(200);
    expect(await dereg.json()).toEqual({});
    expect(await t.redis.hget(SESSIONS, sessionId)).toBeNull();
    expect(await t.redis.client.hexists("pinboard:{3}:nsw:/threads", sessionId)).toBe(0);
    const again = await post(`${wk.url}/registry/heartbeat`, token, heartbeatBody(worker, sessionId));
    expect(again.status).toBe(409);
    expect(await again.json()).toEqual({ error: "unknown session", reregister: true });
  });

  it("records an operator action and the registration in the audit trail, and lists them (GET /registry/audit)", async () => {
    const body = registerBody(worker, { namespaces: ["/audited"] });
    const sessionId = await register(wk.url, body);
    const operator = await credential("pinboard:operator", {}, { sub: "workers-operator" });
    const drained = await post(
      `${wk.url}/registry/drain`,
      operator,
      { clientId: body.clientId, deadline: null },
      { "Pinboard-Via": "console" },
    );
    expect(drained.status).toBe(200);
    const res = await fetch(`${wk.url}/registry/audit?limit=500`, { headers: { authorization: `Bearer ${operator}` } });
    const text = await res.text();
    expect(res.status, text).toBe(200);
    const { entries } = expectRouteOk("GET /registry/audit", text) as { entries: AuditEntry[] };
    const mine = entries
      .filter((e) => e.target.sessionId === sessionId)
      .map(({ type, subject, via }) => ({ type, subject, via }));
    expect(mine).toEqual([
      { type: "drain", subject: "workers-operator", via: "console" },
      { type: "worker.registered", subject: null, via: "registry" },
    ]);
    const narrow = await credential("pinboard:operator", { namespaces: ["/elsewhere"] });
    const hidden = await fetch(`${wk.url}/registry/audit?limit=500`, {
      headers: { authorization: `Bearer ${narrow}` },
    });
    const seen = (await hidden.json()) as { entries: AuditEntry[] };
    expect(seen.entries.filter((e) => e.target.sessionId === sessionId)).toEqual([]);
    const bad = await fetch(`${wk.url}/registry/audit?limit=0`, { headers: { authorization: `Bearer ${operator}` } });
    expect(bad.status).toBe(400);
    expect(await bad.json()).toEqual({ error: "invalid limit" });
  });

  it("handles concurrent registers in one isolate", async () => {
    const ids = await Promise.all(Array.from({ length: 6 }, () => register(wk.url)));
    expect(new Set(ids).size).toBe(6);
    for (const id of ids) expect(await t.redis.hget(SESSIONS, id)).not.toBeNull();
  });

  it("answers 401 unauthorized and 403 forbidden for bad credentials, changing nothing", async () => {
    const before = await t.snapshot();
    const wrongKey = await mintCredential({
      secret: "another-secret-another-secret-0123456789",
      sub: "x",
      scopes: ["pinboard:worker"],
      pinboard: { namespaces: ["*"], allowedBackendHosts: ["*"] },
    });
    for (const auth of [undefined, "garbage", wrongKey]) {
      const res = await post(`${wk.url}/registry/register`, auth, registerBody(worker));
      expect(res.status).toBe(401);
      expect(await res.json()).toEqual({ error: "unauthorized" });
    }
    const operator = await credential("pinboard:operator");
    const forbidden = await post(`${wk.url}/registry/register`, operator, registerBody(worker));
    expect(forbidden.status).toBe(403);
    expect(await forbidden.json()).toEqual({ error: "forbidden" });
    const narrow = await credential("pinboard:worker", { namespaces: ["/other"] });
    const outside = await post(`${wk.url}/registry/register`, narrow, registerBody(worker));
    expect(outside.status).toBe(403);
    expect(await outside.json()).toEqual({ error: "namespace not allowed: /threads" });
    expect(await t.snapshot()).toEqual(before);
  });

  for (const mode of ["mismatch", "redirect", "timeout", "error500", "huge"] as const) {
    it(`answers 400 registration probe failed when the probe gets ${mode}, writing nothing`, async () => {
      const target = await startChallengeServer(worker.secret);
      try {
        worker.mode = mode;
        worker.redirectTo = target.url;
        const body = registerBody(worker);
        answerElsewhere(target, body);
        const before = await t.snapshot();
        const res = await post(`${wk.url}/registry/register`, token, body);
        expect(res.status).toBe(400);
        expect(await res.json()).toEqual({ error: "registration probe failed" });
        expect(target.seen).toHaveLength(0); // a redirect is never followed
        expect(await t.snapshot()).toEqual(before);
      } finally {
        await target.close();
      }
    });
  }

  it("answers 413 body too large past 1 MiB, declared or streamed, and 400 for bad bodies", async () => {
    const big = JSON.stringify({ sessionId: "x", pad: "x".repeat(1024 * 1024) });
    const declared = await post(`${wk.url}/registry/heartbeat`, token, big);
    expect(declared.status).toBe(413);
    expect(await declared.json()).toEqual({ error: "body too large" });

    // Streamed without a declared length (chunked): the Worker stops reading past the limit.
    // It may close the connection before the client has written its last bytes, which fails
    // the client's write (ECONNRESET) before it reads the 413: a race of HTTP/1.1 itself, so a
    // reset is retried and one of the tries must read the 413.
    const streamOnce = () => {
      const chunk = new TextEncoder().encode("x".repeat(64 * 1024));
      let sent = 0;
      const stream = new ReadableStream<Uint8Array>({
        pull(controller) {
          if (sent++ < 17)
            controller.enqueue(chunk); // 1 MiB + 64 KiB
          else controller.close();
        },
      });
      return fetch(`${wk.url}/registry/heartbeat`, {
        method: "POST",
        headers: { authorization: `Bearer ${token}`, "content-type": "application/json" },
        body: stream,
        duplex: "half",
      } as RequestInit);
    };
    let streamed: Response | undefined;
    for (let attempt = 0; attempt < 5 && !streamed; attempt++) {
      streamed = await streamOnce().catch((err: unknown) => {
        const code = (err as { cause?: { code?: string } }).cause?.code;
        if (code !== "ECONNRESET" && code !== "EPIPE") throw err;
        return undefined;
      });
    }
    expect(streamed?.status).toBe(413);
    expect(await streamed!.json()).toEqual({ error: "body too large" });

    const invalid = await post(`${wk.url}/registry/heartbeat`, token, "{nope");
    expect(invalid.status).toBe(400);
    expect(await invalid.json()).toEqual({ error: "invalid json" });
    const wrong = await post(`${wk.url}/registry/deregister`, token, { sessionId: 5 });
    expect(wrong.status).toBe(400);
    expect(await wrong.json()).toEqual({ error: "expected {sessionId: string}" });
  });

  it("a scheduled() sweep pass prunes a session dead for more than a lease", async () => {
    // Its own prefix and a 1 s lease, so nothing else in this file is touched.
    const prefix = "sweep:";
    const short = await startWorkersEntry({
      redis: t,
      env: { ...SETTINGS, PINBOARD_PREFIX: prefix, PINBOARD_LEASE_TTL_MS: "1000" },
    });
    try {
      const dead = await register(short.url);
      const sessions = `${prefix}{global}:sessions`;
      expect(await t.redis.hget(sessions, dead)).not.toBeNull();
      await new Promise((r) => setTimeout(r, 2500)); // more than expiry + one lease
      expect(await t.redis.hget(sessions, dead)).not.toBeNull(); // nothing prunes it but a sweep
      await short.scheduled();
      expect(await t.redis.hget(sessions, dead)).toBeNull();
      for (let b = 0; b < 16; b++) expect(await t.redis.hget(`${prefix}{${b}}:workers`, dead)).toBeNull();
    } finally {
      await short.stop();
    }
  });

  it("shares one Redis with the Node entry: registered via one, heartbeated via the other", async () => {
    const node = await startPinboardProcess({ redis: t, env: SETTINGS });
    try {
      expect((await fetch(`${node.url}/readyz`)).status).toBe(200);
      expect((await fetch(`${wk.url}/readyz`)).status).toBe(200);

      const viaNode = await register(node.url);
      const hb1 = await post(`${wk.url}/registry/heartbeat`, token, heartbeatBody(worker, viaNode, { headroom: 3 }));
      expect(hb1.status).toBe(200);
      expect(await hb1.json()).toEqual({ expiresInMs: 15000, draining: false });

      const viaWorkers = await register(wk.url);
      const hb2 = await post(
        `${node.url}/registry/heartbeat`,
        token,
        heartbeatBody(worker, viaWorkers, { headroom: 4 }),
      );
      expect(hb2.status).toBe(200);
      expect(await hb2.json()).toEqual({ expiresInMs: 15000, draining: false });

      expect(JSON.parse((await t.redis.hget("pinboard:{1}:workers", viaNode))!).headroom).toBe(3);
      expect(JSON.parse((await t.redis.hget("pinboard:{1}:workers", viaWorkers))!).headroom).toBe(4);
      const dereg = await post(`${node.url}/registry/deregister`, token, { sessionId: viaWorkers });
      expect(dereg.status).toBe(200);
      const gone = await post(`${wk.url}/registry/heartbeat`, token, heartbeatBody(worker, viaWorkers));
      expect(gone.status).toBe(409);
      expect(await gone.json()).toEqual({ error: "unknown session", reregister: true });
    } finally {
      await node.stop();
    }
  }, 60_000);
});

describe("wrangler deploy --dry-run", () => {
  it("bundles src/cloudflare.ts cleanly", async () => {
    const child = spawn(
      process.execPath,
      [`${ROOT}node_modules/wrangler/bin/wrangler.js`, "deploy", "--dry-run", "--outdir", ".tmp/dry"],
      {
        cwd: ROOT,
        env: { ...process.env, WRANGLER_SEND_METRICS: "false", CI: "1", NO_COLOR: "1" },
        stdio: ["ignore", "pipe", "pipe"],
      },
    );
    let output = "";
    child.stdout.on("data", (d: Buffer) => (output += d.toString()));
    child.stderr.on("data", (d: Buffer) => (output += d.toString()));
    const code = await new Promise<number | null>((resolve) => child.once("exit", resolve));
    expect(code, output).toBe(0);
    expect(output).toContain("--dry-run: exiting now.");
    expect(output).not.toMatch(/\[WARNING\]|\[ERROR\]/);
  }, 120_000);
});
