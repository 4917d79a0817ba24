import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type DurabilityStore, DurableKeys, type RedisDurabilityStore } from "../../src/pinned/index.ts";
import { durableStore } from "../support/durability.ts";
import { attestation, type LocalWorker, SECRET, startLocalWorker, until } from "../support/local-worker.ts";
import { startTestRedis, type TestRedis } from "../support/redis.ts";

let redis: TestRedis;
let store: RedisDurabilityStore;
let w: LocalWorker;
/** Added to the worker's clock: lets a test make an alarm due without its timer having fired. */
let offset = 0;

beforeAll(async () => {
  redis = await startTestRedis();
  store = durableStore(redis, "al:");
  w = await startLocalWorker({ durability: store, now: () => Date.now() + offset });
});
afterAll(async () => {
  await w.close();
  await store.close();
  await redis.stop();
});

const keys = new DurableKeys("al:");
const ref = (id: string) => ({ ns: "/counter", id });
const stored = async (s: DurabilityStore, id: string, key: string) => {
  const [raw] = await s.get(ref(id), [key]);
  return raw === null || raw === undefined ? undefined : JSON.parse(raw);
};

function fireAlarm(id: string, epoch: string, options: { secret?: string | null; attest?: boolean } = {}) {
  return (async () => {
    const headers: Record<string, string> = { "Pinboard-Epoch": epoch };
    if (options.attest !== false) {
      headers["Pinboard-Attestation"] = await attestation({ htm: "POST", htu: `/counter/${id}/_alarm`, epoch });
    }
    if (options.secret !== null) headers["Pinboard-Proxy-Secret"] = options.secret ?? SECRET;
    return fetch(`${w.url}/counter/${id}/_alarm`, { method: "POST", headers });
  })();
}

describe("the owner's own timer", () => {
  it("fires a stored alarm, then clears it from the instance and the index", async () => {
    const res = await w.call("/counter/t1/alarm?in=1000", { method: "POST", epoch: "1" });
    const { alarm } = (await res.json()) as { alarm: number };
    expect(await store.getAlarm(ref("t1"))).toBe(alarm);
    expect(Number(await redis.redis.client.zscore(keys.alarms, "/counter/t1"))).toBe(alarm);

    await until(async () => (await stored(store, "t1", "alarms")) === 1);
    await until(async () => (await store.getAlarm(ref("t1"))) === null);
    // The index is a second step (another hash slot than the instance): it follows at once.
    await until(async () => (await redis.redis.client.zscore(keys.alarms, "/counter/t1")) === null);
    expect(await stored(store, "t1", "lastAlarmInfo")).toEqual({ retryCount: 0, isRetry: false });
  });

  it("retries a throwing alarm() with backoff", async () => {
    await w.call("/counter/t2", { epoch: "1" });
    await store.put(ref("t2"), "1", [["alarmMode", '"throw-once"']]);
    await w.call("/counter/t2/alarm?in=0", { method: "POST", epoch: "1" });
    // The instance stores its count, then the alarm's info: two writes, read once both are in.
    await until(
      async () =>
        (await stored(store, "t2", "alarms")) === 2 &&
        ((await stored(store, "t2", "lastAlarmInfo")) as { isRetry?: boolean } | null)?.isRetry === true,
      5000,
    );
    expect(await stored(store, "t2", "lastAlarmInfo")).toEqual({ retryCount: 1, isRetry: true });
    await until(async () => (await store.getAlarm(ref("t2"))) === null);
  });

  it("keeps an alarm that alarm() set again", async () => {
    await w.call("/counter/t3", { epoch: "1" });
    await store.put(ref("t3"), "1", [["alarmMode", '"reschedule"']]);
    await w.call("/counter/t3/alarm?in=0", { method: "POST", epoch: "1" });
    await until(async () => (await stored(store, "t3", "alarms")) === 2);
    await until(async () => (await store.getAlarm(ref("t3"))) === null);
  });

  it("re-arms the stored alarm when the instance is activated elsewhere (a new epoch)", async () => {
    await store.activate(ref("t4"), "3");
    await store.setAlarm(ref("t4"), "3", Date.now() + 100);
    await w.call("/counter/t4", { epoch: "4" });
    await until(async () => (await stored(store, "t4", "alarms")) === 1);
  });
});

describe("POST /{ns}/{id}/_alarm (the sweeper)", () => {
  it("answers 403 invalid proxy secret without the secret, even with a valid attestation", async () => {
    for (const secret of [null, "wrong"]) {
      const res = await fireAlarm("s1", "1", { secret });
      expect(res.status).toBe(403);
      expect(await res.json()).toEqual({ detail: "invalid proxy secret" });
    }
  });

  it("answers 403 invalid attestation without an attestation, even with the secret", async () => {
    const res = await fireAlarm("s1", "1", { attest: false });
    expect(res.status).toBe(403);
    expect(await res.json()).toEqual({ detail: "invalid attestation" });
  });

  it("answers 200 {fired:false} when nothing is due", async () => {
    const res = await fireAlarm("s2", "1");
    expect(res.status).toBe(200);
    expect(await res.json()).toEqual({ fired: false });
  });

  it("places the instance and fires a due alarm of a dead owner: 200 {fired:true}", async () => {
    await store.activate(ref("s3"), "5");
    await store.setAlarm(ref("s3"), "5", Date.now() - 1000);
    const res = await fireAlarm("s3", "6");
    expect(res.status).toBe(200);
    expect(await res.json()).toEqual({ fired: true });
    expect(await stored(store, "s3", "alarms")).toBe(1);
    expect(await store.getAlarm(ref("s3"))).toBeNull();
    expect(await store.epochOf(ref("s3"))).toBe("6");
  });

  it("answers 202 {fired:false, running:true} while the alarm is running", async () => {
    await store.activate(ref("s4"), "5");
    await store.put(ref("s4"), "5", [["alarmMode", '"slow"']]);
    await store.setAlarm(ref("s4"), "5", Date.now() - 1000);
    const first = fireAlarm("s4", "6");
    await until(async () => (await stored(store, "s4", "alarms")) === 1);
    const second = await fireAlarm("s4", "6");
    expect(second.status).toBe(202);
    expect(await second.json()).toEqual({ fired: false, running: true });
    expect(await (await first).json()).toEqual({ fired: true });
  });

  it("answers 409 when the epoch lost its fence", async () => {
    await store.activate(ref("s5"), "9");
    await store.setAlarm(ref("s5"), "9", Date.now() - 1000);
    const res = await fireAlarm("s5", "7");
    expect(res.status).toBe(409);
    expect(await res.json()).toEqual({ detail: "stale placement epoch" });
  });

  it("answers 409 when a newer owner claimed the instance while it was resident here", async () => {
    await w.call("/counter/s6", { epoch: "20" });
    await w.call("/counter/s6/alarm?in=10000", { method: "POST", epoch: "20" });
    await store.activate(ref("s6"), "21");
    offset = 20_000;
    try {
      const res = await fireAlarm("s6", "20");
      expect(res.status).toBe(409);
      expect(await res.json()).toEqual({ detail: "stale placement epoch" });
      expect(w.worker.instances().find((i) => i.id === "s6")).toBeUndefined();
    } finally {
      offset = 0;
    }
  });
});

describe("storage.deleteAll", () => {
  it("drops the alarm too, so the timer never fires", async () => {
    await w.call("/counter/d1/increment", { method: "POST", epoch: "1" });
    await w.call("/counter/d1/alarm?in=200", { method: "POST", epoch: "1" });
    const res = await w.call("/counter/d1/delete-all", { method: "POST", epoch: "1" });
    expect(await res.json()).toEqual({ alarm: null });
    expect(await store.getAlarm(ref("d1"))).toBeNull();
    expect(await redis.redis.client.zscore(keys.alarms, "/counter/d1")).toBeNull();
    await new Promise((r) => setTimeout(r, 400));
    expect(await stored(store, "d1", "alarms")).toBeUndefined();
    expect(await stored(store, "d1", "count")).toBeUndefined();
  });
});
