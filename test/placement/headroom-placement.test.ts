import { describe, expect, it } from "vitest";
import { spendSyncApplyScript } from "../../src/placement/lua/index.ts";
import { placeInstance } from "../../src/placement/place-instance.ts";
import type { ResolveRequest } from "../../src/placement/resolver.ts";
import { spendSyncStats } from "../../src/placement/spend-sync.ts";
import { SINGLE_ENV, SINGLE_HOSTNAME } from "../../src/redis/keys.ts";
import type { ChallengeServer } from "../support/challenge-server.ts";
import { credential, type TestPinboard } from "../support/pinboard-app.ts";
import type { TestRedis } from "../support/redis.ts";
import { heartbeatBody, registerWarm } from "../support/registration.ts";
import { useRegistryFixture } from "../support/registry-fixture.ts";
import { startWorkersEntry } from "../support/workerd-entry.ts";

/**
 * "Each new placement decrements the stored value until the next heartbeat", and placement
 * prefers candidates by headroom. A placement writes only its own bucket; the spend sync
 * (src/placement/spend-sync.ts) carries it to the other buckets' namespace lists within about one
 * flush interval, so a worker is not chosen up to shards × its headroom between two heartbeats.
 */

let t: TestRedis, pb: TestPinboard, worker: ChallengeServer, token: string;
useRegistryFixture({}, (f) => ({ t, pb, worker, token } = f));

const keys = () => pb.deps.keys;

const register = (namespaces: string[], headroom: number) =>
  registerWarm(t, pb, token, worker, { namespaces, headroom });

/** The data plane's and the sweeper's placement path, background work collected. */
async function place(ns: string, id: string, extra: Partial<ResolveRequest> = {}): Promise<string> {
  const background: Promise<unknown>[] = [];
  const r = await placeInstance(pb.deps, { ns, id, env: SINGLE_ENV, hostname: "", takeover: "", ...extra }, (w) =>
    background.push(w),
  );
  await Promise.all(background);
  return r.sessionId;
}

/** `n` ids of distinct buckets (none of them in `avoid`). */
function idsInDistinctBuckets(
  prefix: string,
  n: number,
  avoid: ReadonlySet<number> = new Set(),
): Array<{ id: string; bucket: number }> {
  const out: Array<{ id: string; bucket: number }> = [];
  const seen = new Set(avoid);
  for (let i = 0; out.length < n; i++) {
    const id = `${prefix}-${i}`;
    const bucket = keys().bucketOf(id);
    if (seen.has(bucket)) continue;
    seen.add(bucket);
    out.push({ id, bucket });
  }
  return out;
}

async function listedHeadroom(ns: string, bucket: number, sessionId: string): Promise<number | undefined> {
  const entry = await t.redis.hget(keys().nsWorkers(bucket, SINGLE_HOSTNAME, ns), sessionId);
  return entry == null ? undefined : Number(entry.split("\n")[1]);
}

/** Every bucket's list entries of the session in `ns`. */
async function listedEverywhere(ns: string, sessionId: string): Promise<Array<number | undefined>> {
  return Promise.all(
    keys()
      .allBuckets()
      .map((b) => listedHeadroom(ns, b, sessionId)),
  );
}

/** Polls until every bucket lists the session in `ns` at `headroom` (fails after 5 s). */
async function untilListedEverywhere(ns: string, sessionId: string, headroom: number): Promise<void> {
  const deadline = Date.now() + 5000;
  for (;;) {
    const listed = await listedEverywhere(ns, sessionId);
    if (listed.every((h) => h === headroom)) return;
    if (Date.now() > deadline)
      expect(listed, `every bucket's ${ns} entry of ${sessionId}`).toEqual(listed.map(() => headroom));
    await new Promise((r) => setTimeout(r, 10));
  }
}

async function shownHeadroom(sessionId: string): Promise<number> {
  const res = await pb.call("GET", "/registry/workers", { token: await credential("pinboard:operator") });
  const { workers } = (await res.json()) as { workers: Array<{ sessionId: string; headroom: number }> };
  return workers.find((w) => w.sessionId === sessionId)!.headroom;
}

describe("placement sees new placements made in other buckets", () => {
  it("a worker that spent its headroom in other buckets loses the next power-of-two draw", async () => {
    const ns = "/hp-two";
    const H = 3;
    // A starts ahead of B: without the other buckets' spends a fresh bucket would always pick A.
    const a = await register([ns], H);
    const b = await register([ns], H - 1);
    const dropped = spendSyncStats(pb.deps).dropped;

    const spends = idsInDistinctBuckets("two", H);
    for (const { id } of spends) expect(await place(ns, id, { exclude: b })).toBe(a);
    // One flush later every bucket's list shows A's spends: its headroom H less H placements.
    await untilListedEverywhere(ns, a, 0);
    // The record's headroom stays exact: the spent counts, not the synced entries, are its truth.
    expect(await shownHeadroom(a)).toBe(0);

    const [next] = idsInDistinctBuckets("two-next", 1, new Set(spends.map((s) => s.bucket)));
    expect(await place(ns, next!.id)).toBe(b);
    await untilListedEverywhere(ns, b, H - 2);
    expect(await shownHeadroom(b)).toBe(H - 2);
    // B's sync left A's entries alone.
    expect(await listedEverywhere(ns, a)).toEqual(
      keys()
        .allBuckets()
        .map(() => 0),
    );
    expect(spendSyncStats(pb.deps).dropped).toBe(dropped);
  });

  it("a worker's spends in one namespace lower its entries in its other namespaces, in every bucket", async () => {
    const ns = "/hp-x";
    const other = "/hp-y";
    const sid = await register([ns, other], 10);
    for (const { id } of idsInDistinctBuckets("xy", 4)) expect(await place(ns, id)).toBe(sid);
    await untilListedEverywhere(ns, sid, 6);
    await untilListedEverywhere(other, sid, 6);
    expect(await shownHeadroom(sid)).toBe(6);
  });

  it("a heartbeat's new headroom is never lowered by spends of the old one, and a sync applies once", async () => {
    const ns = "/hp-rev";
    const sid = await register([ns], 10);
    const [spend, elsewhere] = idsInDistinctBuckets("rev", 2);
    await place(ns, spend!.id);
    await untilListedEverywhere(ns, sid, 9);

    // The sync of one more spend under revision 0, as a node would send it to bucket `elsewhere`.
    const apply = (rev: number, counted: number) =>
      t.redis.client.eval(
        spendSyncApplyScript.script,
        5,
        keys().workers(elsewhere!.bucket),
        keys().spent(elsewhere!.bucket),
        ...keys().nsListKeys(elsewhere!.bucket, SINGLE_HOSTNAME, ns),
        sid,
        rev,
        counted,
        1,
        3,
      );
    await apply(0, 2);
    expect(await listedHeadroom(ns, elsewhere!.bucket, sid)).toBe(8);
    await apply(0, 2);
    await apply(0, 1); // late and out of order
    expect(await listedHeadroom(ns, elsewhere!.bucket, sid)).toBe(8);

    const res = await pb.call("POST", "/registry/heartbeat", {
      token,
      body: heartbeatBody(worker, sid, { headroom: 20 }),
    });
    expect(res.status).toBe(200);
    expect(await listedHeadroom(ns, elsewhere!.bucket, sid)).toBe(20);
    // Spends counted under revision 0 arrive after the heartbeat: the bucket's mirror holds the
    // new revision, so they count for nothing.
    await apply(0, 5);
    expect(await listedHeadroom(ns, elsewhere!.bucket, sid)).toBe(20);
    expect(await shownHeadroom(sid)).toBe(20);
    // A sync naming a revision this bucket's mirror has not reached yet reports it as behind.
    const reply = (await apply(1_000_000, 5)) as [number, string[]];
    expect(reply[1]).toEqual([sid]);
    expect(await listedHeadroom(ns, elsewhere!.bucket, sid)).toBe(20);
  });

  it("the Workers entry syncs through waitUntil over Upstash REST", async () => {
    const ns = "/hp-workers";
    const sid = await register([ns], 10);
    const wk = await startWorkersEntry({ redis: t, env: { PINBOARD_LOG_LEVEL: "error" } });
    try {
      for (const { id } of idsInDistinctBuckets("wk", 3)) {
        const res = await fetch(`${wk.url}${ns}/${id}`);
        await res.arrayBuffer();
        // The challenge server answers 404 to anything but its challenge: the forward reached it.
        expect(res.status).toBe(404);
      }
      await untilListedEverywhere(ns, sid, 7);
      expect(await shownHeadroom(sid)).toBe(7);
    } finally {
      await wk.stop();
    }
  });
});
