import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
import { registeredScripts } from "../../src/contract/lua-script.ts";
import * as workerLibraryScripts from "../../src/pinned/lua/scripts.generated.ts";
import { resolvePlacement } from "../../src/placement/resolver.ts";
import { Keys } from "../../src/redis/keys.ts";
import { REBIND_CHUNK_IDS } from "../../src/registry/lua/index.ts";
import { TcpRedis } from "../../src/runtime/node/redis/tcp.ts";
import { runSweep } from "../../src/sweeper/sweep.ts";
import "../../scripts/lua/all-scripts.generated.ts";
import { type ChallengeServer, startChallengeServer } from "../support/challenge-server.ts";
import type { EchoAnswer } from "../support/echo-instance.ts";
import { type Fleet, startFleet } from "../support/fleet.ts";
import { credential, startTestPinboard, type TestPinboard } from "../support/pinboard-app.ts";
import { type RedisCluster, startRedisCluster } from "../support/redis-cluster.ts";
import { heartbeatBody, registerBody, registerOk } from "../support/registration.ts";
import { getRow, putRow, putRows } from "../support/rows.ts";
import { installStrictLua, SHEBANG, strictScript } from "../support/strict-lua.ts";

/**
 * Pinboard on a real 3-primary Redis Cluster (redis-server --cluster-enabled, joined by
 * redis-cli --cluster create). The 16 buckets and the {global} slot spread over the three
 * primaries, so a script whose keys straddle two slots fails (Redis answers CROSSSLOT, or "non
 * local key" for an undeclared key of another node), and the request with it. Every script runs
 * at least once below. Every script runs in its strict variant (a `#!lua` shebang, see
 * support/strict-lua.ts), in this process and in the spawned Pinboard process alike: Redis 7.0
 * would otherwise let a script reach an undeclared key of another slot held by the same node.
 * The last tests check the keys of every script call made in this process, and the script caches
 * and command statistics of every node: every script ran, strictly, and no call was refused.
 */

const keys = new Keys("pinboard:", 16);
const ENV = {
  // Sweeps run here, in-process, when the test says so.
  PINBOARD_SWEEP_INTERVAL_MS: "3600000",
  PINBOARD_TRUSTED_PROXIES: "127.0.0.1",
};
/** The spawned Node entry runs strict scripts too (tsx first: the preload is TypeScript). */
const STRICT_PROCESS = { NODE_OPTIONS: "--import tsx --import ./test/support/strict-lua-preload.ts" };

let cluster: RedisCluster, fleet: Fleet, pb: TestPinboard, aware: TestPinboard, worker: ChallengeServer, token: string;
/** In this process every script call runs strictly (installed before the spy, which sees the original scripts). */
const restoreLua = installStrictLua();
/** Every script call of the in-process Pinboards (and the sweep), with its keys. */
const runs = vi.spyOn(TcpRedis.prototype, "run");

beforeAll(async () => {
  cluster = await startRedisCluster({ primaries: 3 });
  fleet = await startFleet({ workers: 3, cluster, env: { ...ENV, ...STRICT_PROCESS } });
  await fleet.skipColdStart();
  // A second node of the same fleet, in-process (its deps drive the sweep), and a hostname-aware
  // fleet under its own prefix on the same cluster.
  pb = await startTestPinboard({ clusterNodes: cluster.nodes }, ENV);
  aware = await startTestPinboard(
    { clusterNodes: cluster.nodes },
    { ...ENV, PINBOARD_HOSTNAME_AWARE: "true", PINBOARD_PREFIX: "aware:" },
  );
  worker = await startChallengeServer();
  token = await credential("pinboard:worker");
});
afterAll(async () => {
  await worker?.close();
  await aware?.close();
  await pb?.close();
  await fleet?.close();
  await cluster?.stop();
  runs.mockRestore();
  restoreLua();
});

const post = async (path: string, tok: string, body: unknown) => {
  const res = await pb.call("POST", path, { token: tok, body });
  return { status: res.status, body: (await res.json()) as Record<string, unknown> };
};
const op = () => credential("pinboard:operator");
const get = <T = EchoAnswer>(path: string, headers: Record<string, string> = {}) =>
  fetch(`${fleet.pb.url}${path}`, { headers }).then(async (r) => ({ status: r.status, body: (await r.json()) as T }));

/** Ids until every bucket holds `perBucket` of them. */
async function idsInEveryBucket(prefix: string, perBucket: number): Promise<Array<{ id: string; bucket: number }>> {
  const count = new Array<number>(16).fill(0);
  const out: Array<{ id: string; bucket: number }> = [];
  for (let i = 0; count.some((c) => c < perBucket); i++) {
    const id = `${prefix}-${i}`;
    const bucket = await keys.bucketOf(id);
    if (count[bucket]! >= perBucket) continue;
    count[bucket]!++;
    out.push({ id, bucket });
  }
  return out;
}

describe("the cluster", () => {
  it("spreads the 16 buckets and the {global} slot over all three primaries", async () => {
    const primaries = await cluster.primaries();
    expect(primaries).toHaveLength(3);
    const owners = new Set<number>();
    for (let b = 0; b < 16; b++) owners.add((await cluster.ownerOf(keys.workers(b))).port);
    expect(owners.size).toBe(3);
    expect(primaries.map((p) => p.node.port)).toContain((await cluster.ownerOf(keys.sessions)).port);
  });
});

describe("registry flow on the cluster", () => {
  it("register, heartbeat, release, tag, drain, wind_down, deregister", async () => {
    const { sessionId } = await registerOk(pb, token, registerBody(worker, { namespaces: ["/threads", "/docs"] }));
    // register-session in {global}, register-bucket in every bucket: the mirror is on every node.
    expect(await fleet.t.redis.hget(keys.sessions, sessionId)).not.toBeNull();
    for (let b = 0; b < 16; b++) {
      expect(await fleet.t.redis.hget(keys.workers(b), sessionId)).not.toBeNull();
      expect(await fleet.t.redis.hget(keys.nsWorkers(b, "", "/docs"), sessionId)).not.toBeNull();
    }

    const hb = await pb.call("POST", "/registry/heartbeat", { token, body: heartbeatBody(worker, sessionId) });
    expect(hb.status).toBe(200);
    expect(await hb.json()).toMatchObject({ expiresInMs: 15000, draining: false });

    // Rows in many buckets, released in one request (one release-row per row, each in its slot).
    const rows = (await idsInEveryBucket("row", 1)).map((r) => r.id);
    for (const id of rows) await putRow(fleet.t, "/threads", id, { sessionId, epoch: "100" });
    const released = await post(
      "/registry/release",
      token,
      rows.slice(0, 8).map((id) => ({ sessionId, namespace: "/threads", id, epoch: "100" })),
    );
    expect(released).toEqual({ status: 200, body: { released: 8 } });
    for (const id of rows.slice(0, 8)) expect(await getRow(fleet.t, "/threads", id)).toBeNull();

    const tagged = await post("/registry/tag", token, {
      sessionId,
      namespace: "/threads",
      id: rows[8]!,
      epoch: "100",
      tag: "ws:W",
    });
    expect(tagged).toEqual({ status: 200, body: { tagged: true } });
    expect((await getRow(fleet.t, "/threads", rows[8]!))!.tag).toBe("ws:W");

    // Operator writes: apply-drain in {global}; wind-down-rows per bucket, enqueue-message in {global}.
    const clientId = JSON.parse((await fleet.t.redis.hget(keys.sessions, sessionId))!).clientId as string;
    const tok = await op();
    expect(await post("/registry/drain", tok, { clientId, deadline: null })).toEqual({
      status: 200,
      body: { drained: true },
    });
    expect(await post("/registry/undrain", tok, { clientId })).toEqual({ status: 200, body: { revoked: true } });
    expect(await post("/registry/wind_down", tok, { namespace: "/threads", id: rows[9]!, deadline: 60 })).toEqual({
      status: 200,
      body: { queued: true },
    });
    expect(await post("/registry/wind_down", tok, { namespace: "/threads", deadline: 60 })).toEqual({
      status: 200,
      body: { queued: 8 },
    });
    const delivered = await pb.call("POST", "/registry/heartbeat", { token, body: heartbeatBody(worker, sessionId) });
    const { messages } = (await delivered.json()) as { messages: Array<{ type: string; id: string }> };
    expect(
      messages
        .filter((m) => m.type === "wind_down")
        .map((m) => m.id)
        .sort(),
    ).toEqual(rows.slice(8).sort());

    const gone = await post("/registry/deregister", token, { sessionId });
    expect(gone).toEqual({ status: 200, body: {} });
    expect(await fleet.t.redis.hget(keys.sessions, sessionId)).toBeNull();
    for (let b = 0; b < 16; b++) expect(await fleet.t.redis.hget(keys.nsWorkers(b, "", "/docs"), sessionId)).toBeNull();

    // The audit trail: one stream in {global} (append-audit), read back page by page (read-audit).
    const trail = await pb.call("GET", "/registry/audit?limit=500", { token: tok });
    expect(trail.status).toBe(200);
    const entries = ((await trail.json()) as { entries: Array<{ type: string; target: { sessionId?: string } }> })
      .entries;
    expect(entries.filter((e) => e.target.sessionId === sessionId).map((e) => e.type)).toEqual([
      "worker.deregistered",
      "undrain",
      "drain",
      "worker.registered",
    ]);
  });

  it("a re-register reclaims rows of every bucket (register-bucket and, past 2,000 ids in a bucket, rebind-rows)", async () => {
    const body = registerBody(worker, { namespaces: ["/reclaimed"] });
    const first = await registerOk(pb, token, body);
    const spread = (await idsInEveryBucket("kept", 1)).map((r) => r.id);
    const crowded: string[] = [];
    for (let i = 0; crowded.length <= REBIND_CHUNK_IDS; i++)
      if (keys.bucketOf(`crowd-${i}`) === 3) crowded.push(`crowd-${i}`);
    const rows = [...spread, ...crowded];
    await putRows(
      fleet.t,
      "/reclaimed",
      rows.map((id) => ({ id, row: { sessionId: first.sessionId, epoch: "7" } })),
    );
    const again = registerBody(worker, {
      clientId: body.clientId,
      namespaces: ["/reclaimed"],
      prevSessionId: first.sessionId,
      instances: { "/reclaimed": rows },
    });
    const second = await registerOk(pb, token, again);
    for (const id of rows)
      expect(await getRow(fleet.t, "/reclaimed", id)).toMatchObject({ sessionId: second.sessionId, epoch: "7" });
    expect(await post("/registry/deregister", token, { sessionId: second.sessionId })).toEqual({
      status: 200,
      body: {},
    });
  });

  it("a bucket missing a namespace list copies the previous bucket's, held by another node", async () => {
    // A namespace only this challenge server serves: no heartbeat repairs the list meanwhile.
    const { sessionId } = await registerOk(pb, token, registerBody(worker, { namespaces: ["/copied"] }));
    let bucket = 1;
    while (
      (await cluster.ownerOf(keys.workers(bucket))).port === (await cluster.ownerOf(keys.workers(bucket - 1))).port
    )
      bucket++;
    for (const key of keys.nsListKeys(bucket, "", "/copied")) await fleet.t.redis.client.del(key);
    let n = 0;
    while ((await keys.bucketOf(`copied-${n}`)) !== bucket) n++;
    const placed = await resolvePlacement(pb.deps, {
      ns: "/copied",
      id: `copied-${n}`,
      env: "*",
      hostname: "",
      takeover: "",
    });
    expect(placed.sessionId).toBe(sessionId);
    expect(await fleet.t.redis.hget(keys.nsWorkers(bucket, "", "/copied"), sessionId)).not.toBeNull();
    expect(await post("/registry/deregister", token, { sessionId })).toEqual({ status: 200, body: {} });
  });

  it("the hostname-aware binding lookup runs in its own slot", async () => {
    // No (hostname, ns) binding for nobody.example: the lookup (its own {global} slot of the
    // "aware:" prefix) answers, and the refusal is the contract's no-hostname-workers, not a
    // Redis failure such as 503 redis unavailable, retry.
    const res = await aware.call("GET", "/threads/some-id", { headers: { host: "nobody.example" } });
    expect({ status: res.status, retryAfter: res.headers.get("retry-after"), body: await res.json() }).toEqual({
      status: 503,
      retryAfter: "1",
      body: { error: "no live workers for hostname" },
    });
  });
});

describe("data plane through the Pinboard process on the cluster", () => {
  it("places and forwards ids of every bucket, so every primary serves placements", async () => {
    const ids = await idsInEveryBucket("spread", 3);
    const first = await Promise.all(ids.map(({ id }) => get(`/echo/${id}`)));
    expect(first.map((r) => r.status)).toEqual(ids.map(() => 200));
    const nodes = new Set<number>();
    for (const [i, { id, bucket }] of ids.entries()) {
      const answer = first[i]!.body;
      expect(answer.id).toBe(id);
      const row = await getRow(fleet.t, "/echo", id);
      expect(row).toMatchObject({ sessionId: answer.attestation.aud, epoch: answer.epoch });
      nodes.add((await cluster.ownerOf(keys.placements(bucket, "*", "/echo"))).port);
    }
    expect(nodes.size).toBe(3);
    // The second request finds the row: same owner, same epoch, the same activation.
    const again = await Promise.all(ids.map(({ id }) => get(`/echo/${id}`)));
    for (const [i, r] of again.entries()) {
      expect(r.status).toBe(200);
      expect(r.body.epoch).toBe(first[i]!.body.epoch);
      expect(r.body.hits).toBe(2);
    }
  });

  it("concurrent first requests for one id end in one owner at one epoch", async () => {
    for (const id of ["race-a", "race-b", "race-c"]) {
      const answers = await Promise.all(
        Array.from({ length: 30 }, (_, i) => get(`/echo/${id}?n=${i}`, { "x-forwarded-for": `10.1.${i}.1` })),
      );
      expect(answers.map((a) => a.status)).toEqual(Array(30).fill(200));
      expect(new Set(answers.map((a) => a.body.epoch)).size).toBe(1);
      expect(new Set(answers.map((a) => a.body.attestation.aud)).size).toBe(1);
      expect(await getRow(fleet.t, "/echo", id)).toMatchObject({
        sessionId: answers[0]!.body.attestation.aud,
        epoch: answers[0]!.body.epoch,
      });
    }
  });

  it("re-places a row of a dead owner and clears its overwritten marker after a 2xx", async () => {
    const id = "orphaned-1";
    const bucket = await keys.bucketOf(id);
    await putRow(fleet.t, "/echo", id, { sessionId: "dead-session", epoch: "5" });
    const r = await get(`/echo/${id}`);
    expect(r.status).toBe(200);
    expect(BigInt(r.body.epoch)).toBeGreaterThan(5n);
    const field = `*\n/echo\n${id}`;
    for (let i = 0; i < 50 && (await fleet.t.redis.hget(keys.overwritten(bucket), field)) !== null; i++)
      await new Promise((res) => setTimeout(res, 20));
    expect(await fleet.t.redis.hget(keys.overwritten(bucket), field)).toBeNull();
  });

  it("counts failures, a success ends the run, five in a row eject the worker in every bucket", async () => {
    const id = "flaky-1";
    const outlier = async (owner: string) => (await fleet.t.redis.hget(keys.outliers, owner)) ?? "";
    const until = async (check: () => Promise<boolean>) => {
      for (let i = 0; i < 100 && !(await check()); i++) await new Promise((res) => setTimeout(res, 20));
      expect(await check()).toBe(true);
    };
    const failed = await get(`/echo/${id}?status=502`);
    expect(failed.status).toBe(502);
    const owner = failed.body.attestation.aud as string;
    // Both are recorded after the answer (record-failure, then record-success resets the run).
    await until(async () => (await outlier(owner)).startsWith("1\n"));
    expect((await get(`/echo/${id}`)).status).toBe(200);
    await until(async () => (await outlier(owner)).startsWith("0\n"));
    for (let i = 0; i < 5; i++) expect((await get(`/echo/${id}?status=502`)).status).toBe(502);
    await until(async () => {
      for (let b = 0; b < 16; b++) if ((await fleet.t.redis.hget(keys.ejected(b), owner)) === null) return false;
      return true;
    });
  });

  it("operator reads: /registry/workers and /registry/overview", async () => {
    const auth = { authorization: `Bearer ${await fleet.pb.operatorCredential()}` };
    const workers = await get<{ workers: Array<{ sessionId: string }> }>("/registry/workers", auth);
    expect(workers.status).toBe(200);
    const sessions = fleet.workers.map((w) => w.worker.sessionId);
    expect(workers.body.workers.map((w: { sessionId: string }) => w.sessionId)).toEqual(
      expect.arrayContaining(sessions),
    );
    const overview = await get<{ namespaces: Array<{ entries: Array<{ id: string }> }> }>(
      "/registry/overview?ns=/echo",
      auth,
    );
    expect(overview.status).toBe(200);
    const entries = overview.body.namespaces.flatMap((n: { entries: Array<{ id: string }> }) =>
      n.entries.map((e) => e.id),
    );
    expect(entries).toEqual(expect.arrayContaining(["race-a", "race-b", "race-c", "orphaned-1"]));
    // The explorer's reads: a prefix search (HSCAN MATCH), one placement's story, and the spread
    // counted by the spread-slice script in every bucket's slot.
    const search = await get<{ namespaces: Array<{ entries: Array<{ id: string }> }> }>(
      "/registry/overview?limit=100&prefix=race-",
      auth,
    );
    expect(search.body.namespaces.flatMap((n) => n.entries.map((e) => e.id)).sort()).toEqual([
      "race-a",
      "race-b",
      "race-c",
    ]);
    const story = await get<{ placements: Array<{ id: string; owner: string }> }>(
      "/registry/placement?ns=/echo&id=race-a",
      auth,
    );
    expect(story.body.placements).toMatchObject([{ id: "race-a", owner: "live" }]);
    const spread = await get<{ complete: boolean; workers: Array<{ placements: number }> }>("/registry/spread", auth);
    expect(spread.body.complete).toBe(true);
    expect(spread.body.workers.reduce((sum, w) => sum + w.placements, 0)).toBeGreaterThanOrEqual(entries.length);
  });
});

describe("a sweep pass on the cluster", () => {
  it("GC, resurrection, orphans, durability wakes and due alarms, each in its own slot", async () => {
    // The durability index lists one durable instance and one due alarm (the worker library's
    // store would write these; their {pinned-index} slot is yet another one).
    await fleet.t.redis.client.hset("pinned:{pinned-index}:instances", "/echo/durable-1", "");
    await fleet.t.redis.client.zadd("pinned:{pinned-index}:alarms", 1, "/echo/alarm-1");
    const report = await runSweep(pb.deps);
    expect(report).toMatchObject({ ran: true, resurrected: 1 });
    expect(report.wakes!.woken).toBeGreaterThanOrEqual(1);
    expect(report.alarms).toMatchObject({ stale: 1 });
    expect(await fleet.t.redis.client.zcard("pinned:{pinned-index}:alarms")).toBe(0);
    expect(await getRow(fleet.t, "/echo", "durable-1")).toMatchObject({
      sessionId: expect.any(String),
      epoch: expect.stringMatching(/^\d+$/),
    });
    // A second pass finds the incarnation and nothing to resurrect.
    expect(await runSweep(pb.deps)).toMatchObject({ ran: true, resurrected: 0 });
  });
});

describe("one hash slot per script", () => {
  it("every script call of this process named keys of one slot", async () => {
    const slotOf = new Map<string, number>();
    const slot = async (key: string) => {
      if (!slotOf.has(key)) slotOf.set(key, Number(await fleet.t.redis.client.call("CLUSTER", "KEYSLOT", key)));
      return slotOf.get(key)!;
    };
    const seen = new Set<string>();
    const straddling: string[] = [];
    for (const [script, keyList] of runs.mock.calls) {
      seen.add(script.name);
      const slots = new Set(await Promise.all(keyList.map(slot)));
      if (slots.size > 1) straddling.push(`${script.name}: ${keyList.join(" ")}`);
    }
    expect(straddling).toEqual([]);
    // The Pinboard process ran the rest (fleet-claim, resolve, the heartbeats of its workers …).
    expect(seen.size).toBeGreaterThanOrEqual(15);
  });

  it("every registered script ran on the cluster, strictly, and no script call was refused or failed", async () => {
    // Pinboard's scripts; the worker library's (src/pinned/lua/) run through its own clients and
    // are held to one slot by test/pinned/durability.test.ts and test/pinned/fenced-redis.test.ts.
    const library = new Set(Object.values(workerLibraryScripts).map((script) => script.name));
    const scripts = registeredScripts().filter((s) => !library.has(s.name));
    expect(scripts.length).toBeGreaterThanOrEqual(26);
    const primaries = (await cluster.primaries()).map((p) => p.node.port);
    const cachedOn = async (list: Array<{ name: string; sha: string }>) => {
      const cached = new Set<string>();
      for (const port of primaries) {
        const exists = (await cluster.command(port, "SCRIPT", "EXISTS", ...list.map((s) => s.sha))) as number[];
        for (const [i, s] of list.entries()) if (exists[i] === 1) cached.add(s.name);
      }
      return cached;
    };
    // A script is cached on a node only once it ran there by EVAL (Pinboard never SCRIPT LOADs).
    // Every script ran in its strict variant, so a key it reaches without declaring it (of another
    // slot, even on the same node) would have failed the call, and the statistics below with it.
    const strict = await cachedOn(scripts.map(strictScript));
    expect(scripts.map((s) => s.name).filter((name) => !strict.has(name))).toEqual([]);
    // And nothing ran in compatibility mode: not this process, not the spawned Node entry.
    expect([...(await cachedOn(scripts))]).toEqual([]);

    const stats = { eval: { calls: 0, rejected: 0, failed: 0 }, evalsha: { calls: 0, rejected: 0, failed: 0 } };
    for (const port of primaries) {
      const text = String(await cluster.command(port, "INFO", "commandstats"));
      for (const name of ["eval", "evalsha"] as const) {
        const line = new RegExp(`^cmdstat_${name}:(.*)$`, "m").exec(text)?.[1] ?? "";
        const field = (f: string) => Number(new RegExp(`${f}=(\\d+)`).exec(line)?.[1] ?? 0);
        stats[name].calls += field("calls");
        stats[name].rejected += field("rejected_calls");
        stats[name].failed += field("failed_calls");
      }
    }
    // (errorstat_ERR also counts ioredis' CLIENT SETINFO on every connection, unknown to Redis
    // 7.0, so only the kinds below are asserted.)
    const errors = await cluster.errorStats();
    console.log(
      `script calls on the cluster: ${JSON.stringify(stats)}; error replies by kind: ${JSON.stringify(errors)}`,
    );
    expect(stats.evalsha.calls).toBeGreaterThan(100);
    expect(errors.CROSSSLOT ?? 0).toBe(0);
    // CROSSSLOT is a rejection; an undeclared key of another node fails the script at run time.
    expect(stats.eval.rejected + stats.evalsha.rejected).toBe(0);
    expect(stats.eval.failed).toBe(0);
    // The only failed EVALSHA is the first one of a script on a node: NOSCRIPT, then EVAL.
    expect(stats.evalsha.failed).toBe(errors.NOSCRIPT ?? 0);
    expect(fleet.pb.output()).not.toMatch(/same slot|CROSSSLOT|non local key|redis unavailable|unhandled error/i);
  });

  it("the cluster really refuses a script across two slots (so the checks above can fail)", async () => {
    const home = await cluster.ownerOf("pinboard:{0}:x");
    let elsewhere = 1;
    while ((await cluster.ownerOf(`pinboard:{${elsewhere}}:x`)).port === home.port) elsewhere++;
    const evalOn = (script: string, ...keyList: string[]) =>
      cluster.command(home.port, "EVAL", script, String(keyList.length), ...keyList);
    await expect(
      evalOn("return redis.call('GET', KEYS[2])", "pinboard:{0}:x", `pinboard:{${elsewhere}}:x`),
    ).rejects.toThrow(/CROSSSLOT/);
    await expect(evalOn(`return redis.call('GET', 'pinboard:{${elsewhere}}:x')`, "pinboard:{0}:x")).rejects.toThrow(
      /non local key/,
    );
    // An undeclared key of another slot on the same node: Redis 7.0 lets a script without a
    // shebang reach it, the strict variant every script above ran as is refused.
    let sameNode = 1;
    while ((await cluster.ownerOf(`pinboard:{${sameNode}}:x`)).port !== home.port) sameNode++;
    const undeclared = `return redis.call('GET', 'pinboard:{${sameNode}}:x')`;
    await expect(evalOn(undeclared, "pinboard:{0}:x")).resolves.toBeNull();
    await expect(evalOn(SHEBANG + undeclared, "pinboard:{0}:x")).rejects.toThrow(/do not hash to the same slot/);
    // Through the strict adapter Pinboard's calls go through, as a failed call.
    const probe = { name: "undeclared-key-probe", script: undeclared, sha: "0".repeat(40) };
    await expect(pb.deps.redis.run(probe, ["pinboard:{0}:x"], [])).rejects.toThrow(/do not hash to the same slot/);
    // Through the adapter Pinboard uses, too.
    await expect(
      fleet.t.redis.client.eval("return 1", 2, "pinboard:{0}:x", `pinboard:{${elsewhere}}:x`),
    ).rejects.toThrow(/CROSSSLOT/);
  });
});
