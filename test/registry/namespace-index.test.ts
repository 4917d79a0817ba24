import { beforeAll, describe, expect, it } from "vitest";
import { resolvePlacement } from "../../src/placement/resolver.ts";
import { SINGLE_ENV, SINGLE_HOSTNAME } from "../../src/redis/keys.ts";
import type { ChallengeServer } from "../support/challenge-server.ts";
import type { TestPinboard } from "../support/pinboard-app.ts";
import type { TestRedis } from "../support/redis.ts";
import { heartbeatBody, registerBody, registerOk } from "../support/registration.ts";
import { useRegistryFixture } from "../support/registry-fixture.ts";

/**
 * The indexes that make a new placement O(log n) (src/redis/scripts/lua-ns-list.ts) and
 * registration pruning O(dead) (LUA_EXPIRY_INDEX): they must give exactly the decisions a full
 * scan gives, stay equal to what they index through every write, and repair themselves after an
 * edit behind the scripts' back.
 */

let t: TestRedis;
let pb: TestPinboard;
let token: string;
let server: ChallengeServer;
useRegistryFixture({}, (f) => ({ t, pb, worker: server, token } = f), {
  worker: { secret: "index-secret-0123456789" },
});
beforeAll(async () => {
  for (const b of pb.deps.keys.allBuckets()) await t.redis.client.set(pb.deps.keys.bootTime(b), "0");
});

const keys = () => pb.deps.keys;
const register = async (ns: string, headroom = 1000) =>
  (await registerOk(pb, token, registerBody(server, { namespaces: [ns], headroom }))).sessionId;
async function heartbeat(sid: string, overrides: Record<string, unknown>): Promise<void> {
  const res = await pb.call("POST", "/registry/heartbeat", {
    token,
    body: heartbeatBody(server, sid, { headroom: 1000, ...overrides }),
  });
  expect(res.status, await res.text()).toBe(200);
}
const place = async (ns: string, id: string, affinityHash?: number) =>
  (await resolvePlacement(pb.deps, { ns, id, env: SINGLE_ENV, hostname: "", takeover: "", affinityHash })).sessionId;

// The oracle: rendezvous over the candidates' seeds (the sessionId's first 8 hex digits) on the
// key's slot, with the murmur3 finaliser the script uses.
function mix(h: number): number {
  h = (h ^ (h >>> 16)) >>> 0;
  h = Math.imul(h, 0x85ebca6b) >>> 0;
  h = (h ^ (h >>> 13)) >>> 0;
  h = Math.imul(h, 0xc2b2ae35) >>> 0;
  return (h ^ (h >>> 16)) >>> 0;
}
function rendezvous(key: number, candidates: string[]): string {
  const slot = key % 1024;
  let best = "";
  let bestScore = -1;
  for (const sid of candidates) {
    const score = mix((slot ^ parseInt(sid.slice(0, 8), 16)) >>> 0);
    if (score > bestScore || (score === bestScore && sid < best)) [best, bestScore] = [sid, score];
  }
  return best;
}

/** Every index of the namespace and of the fleet equals a recount of what it indexes. */
async function expectIndexesInStep(ns: string): Promise<void> {
  const c = t.redis.client;
  const k = keys();
  const zsetOf = async (key: string) => {
    const flat = await c.zrange(key, "0", "-1", "WITHSCORES");
    const out: Record<string, number> = {};
    for (let i = 0; i < flat.length; i += 2) out[flat[i]!] = Number(flat[i + 1]);
    return out;
  };
  const expiriesOf = (hash: Record<string, string>) =>
    Object.fromEntries(
      Object.entries(hash).map(([sid, json]) => [sid, (JSON.parse(json) as { expiry: number }).expiry]),
    );
  expect(await zsetOf(k.sessionExpiries)).toEqual(expiriesOf(await c.hgetall(k.sessions)));
  for (const b of k.allBuckets()) {
    expect(await zsetOf(k.workerExpiries(b))).toEqual(expiriesOf(await c.hgetall(k.workers(b))));
    const [list, exps, summary] = k.nsListKeys(b, SINGLE_HOSTNAME, ns);
    const entries = Object.entries(await c.hgetall(list)).map(([sid, e]) => {
      const [expiry, headroom, flags] = e.split("\n");
      return { sid, expiry: Number(expiry), headroom: Number(headroom), clean: flags === "" };
    });
    expect(await zsetOf(exps)).toEqual(Object.fromEntries(entries.map((e) => [e.sid, e.expiry])));
    const clean = entries.filter((e) => e.clean);
    if (entries.length === 0) continue;
    const [n, sum] = await c.hmget(summary, "n", "sum");
    expect(Number(n)).toBe(clean.length);
    expect(Number(sum)).toBe(clean.reduce((s, e) => s + e.headroom, 0));
  }
}

const KEYS = Array.from({ length: 48 }, (_, i) => (i * 2_654_435_761) >>> 0);
let placed = 0;
/** Places a new id for every key and expects the rendezvous winner over `candidates`. */
async function expectRendezvous(ns: string, candidates: string[]): Promise<void> {
  for (const key of KEYS) expect(await place(ns, `r-${placed++}`, key)).toBe(rendezvous(key, candidates));
}

describe("namespace-list indexes", () => {
  it("affinity picks the rendezvous winner of the candidates through joins, drains, recoveries and departures", async () => {
    const ns = "/rv";
    const sids: string[] = [];
    for (let i = 0; i < 10; i++) sids.push(await register(ns));
    await expectRendezvous(ns, sids);
    // Again: now from the cached winners.
    await expectRendezvous(ns, sids);

    // A join can beat cached winners: the cache must notice.
    const joined = await register(ns);
    await expectRendezvous(ns, [...sids, joined]);

    // Draining takes a worker out; renewing it undrained brings it back.
    const drained = sids[3]!;
    await heartbeat(drained, { draining: true });
    await expectRendezvous(
      ns,
      [...sids, joined].filter((s) => s !== drained),
    );
    await heartbeat(drained, { draining: false });
    await expectRendezvous(ns, [...sids, joined]);

    const gone = sids[5]!;
    const res = await pb.call("POST", "/registry/deregister", { token, body: { sessionId: gone } });
    expect(res.status).toBe(200);
    await expectRendezvous(
      ns,
      [...sids, joined].filter((s) => s !== gone),
    );
    await expectIndexesInStep(ns);
  });

  it("a new placement reads no whole list once its slot's winner is cached, nor on power of two", async () => {
    const ns = "/cost";
    for (let i = 0; i < 30; i++) await register(ns);
    const hgetalls = async () => {
      let calls = 0;
      for (const node of await t.primaries())
        calls += Number(/cmdstat_hgetall:calls=(\d+)/.exec(await node.info("commandstats"))?.[1] ?? 0);
      return calls;
    };
    // Winners are cached per bucket (each bucket has its own list): warm every bucket's.
    const warm = new Set<number>();
    for (let i = 0; warm.size < keys().shards; i++) {
      const b = await keys().bucketOf(`warm-${i}`);
      if (warm.has(b)) continue;
      warm.add(b);
      await place(ns, `warm-${i}`, 12345);
    }
    const before = await hgetalls();
    const N = 40;
    for (let i = 0; i < N; i++) await place(ns, `c-${i}`, 12345);
    for (let i = 0; i < N; i++) await place(ns, `p-${i}`);
    // One HGETALL per resolve reads the bucket's (small) ejected hash; a scan of the list would
    // double that. A little slack for the node's own background work.
    expect((await hgetalls()) - before).toBeLessThanOrEqual(2 * N + 4);
    await expectIndexesInStep(ns);
  });

  it("repairs itself after the list and its indexes are edited behind the scripts' back", async () => {
    const ns = "/heal";
    const sids: string[] = [];
    for (let i = 0; i < 6; i++) sids.push(await register(ns));
    const id = "heal-1";
    const b = await pb.deps.keys.bucketOf(id);
    const [list, exps, summary] = keys().nsListKeys(b, SINGLE_HOSTNAME, ns);
    await t.redis.client.hdel(list, sids[0]!);
    await t.redis.client.del(exps);
    await t.redis.client.hset(summary, "n", "999", "sum", "-5");
    const others = sids.slice(1);
    // The summary lies but the list and index disagree in count: rebuilt before the choice.
    expect(others).toContain(await place(ns, id, 777));
    let again = 0;
    while ((await pb.deps.keys.bucketOf(`heal-again-${again}`)) !== b) again++;
    expect(await place(ns, `heal-again-${again}`, 777)).toBe(rendezvous(777, await t.redis.client.hkeys(list)));
    await expectIndexesInStep(ns);
  });
});
