import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type FaultProxy, startFaultProxy } from "../../scripts/chaos/fault-proxy.ts";
import { DurabilityUnavailableError, RedisDurabilityStore } from "../../src/pinned/index.ts";
import { type EmbeddedRedis, startEmbeddedRedis } from "../../src/runtime/node/dev-store/embedded-redis.ts";

/**
 * The durability store's own connection on a link that loses its state without a reset (a
 * middlebox or host that forgot the connection: the chaos campaign's blackhole): a write fails
 * within its timeout instead of hanging, and once the link is back the store recovers on a new
 * connection instead of waiting on the dead one for good. A connection that died while idle is
 * found by the store's own PING and made again before the next write needs it.
 */

let redis: EmbeddedRedis;
let proxy: FaultProxy;
let store: RedisDurabilityStore;
const ref = { ns: "/lists", id: "k1" };

beforeAll(async () => {
  redis = await startEmbeddedRedis();
  proxy = await startFaultProxy("store", "127.0.0.1", redis.port);
  store = new RedisDurabilityStore({ redis: `redis://127.0.0.1:${proxy.port}`, commandTimeoutMs: 300 });
  await store.activate(ref, "5");
});
afterAll(async () => {
  await store.close();
  await proxy.close();
  await redis.stop();
});

describe("a durability store on a link that silently lost its connection", () => {
  it("fails a write within its timeout, then writes again once the link is back", async () => {
    proxy.setMode("blackhole");
    const started = Date.now();
    await expect(store.put(ref, "5", [["list", "[1]"]])).rejects.toThrow(DurabilityUnavailableError);
    expect(Date.now() - started).toBeLessThan(2000);
    proxy.setMode("pass");
    const deadline = Date.now() + 5000;
    for (;;) {
      const ok = await store.put(ref, "5", [["list", "[1,2]"]]).then(
        () => true,
        () => false,
      );
      if (ok) break;
      expect(Date.now()).toBeLessThan(deadline);
      await new Promise((r) => setTimeout(r, 100));
    }
    expect(await store.get(ref, ["list"])).toEqual(["[1,2]"]);
  });

  it("replaces a connection that died while idle before the next write needs it", async () => {
    // The link forgets the connection while nothing is sent, and comes back.
    proxy.setMode("blackhole");
    await new Promise((r) => setTimeout(r, 100));
    proxy.setMode("pass");
    // Long enough for a PING (every 300 ms) to go unanswered for the socket timeout (600 ms) and
    // for the reconnection; without the PING the dead connection would still be waiting here.
    await new Promise((r) => setTimeout(r, 2000));
    const started = Date.now();
    await store.put(ref, "5", [["list", "[1,2,3]"]]);
    expect(Date.now() - started).toBeLessThan(300);
    expect(await store.get(ref, ["list"])).toEqual(["[1,2,3]"]);
  });
});
