import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";
import { Keys, SINGLE_ENV } from "../../src/redis/keys.ts";
import type { ChallengeServer } from "../support/challenge-server.ts";
import type { TestPinboard } from "../support/pinboard-app.ts";
import type { TestRedis } from "../support/redis.ts";
import { registerBody, registerOk } from "../support/registration.ts";
import { useRegistryFixture } from "../support/registry-fixture.ts";
import { getRow, putRow } from "../support/rows.ts";

/**
 * A register that fails after its fleet-wide write is undone before it answers: its bucket
 * mirrors and namespace-list entries are removed, the rows its reclaim had re-bound go back to
 * prevSessionId, its record and client mapping are dropped. The fault here is real: one bucket's
 * placements hash is a string, so that bucket's reclaim script fails (WRONGTYPE) while the other
 * buckets' reclaims succeed. Its log lines carry no command argument.
 */

const ACCOUNT = "undo-account-7731";
let t: TestRedis;
let pb: TestPinboard;
let worker: ChallengeServer;
let token: string;
useRegistryFixture({ PINBOARD_LOG_LEVEL: "warn" }, (f) => ({ t, pb, worker, token } = f), {
  token: { sub: "undo", account: ACCOUNT },
  worker: { secret: "undo-worker-secret-51c2e0" },
});

const keys = new Keys("pinboard:", 16);
const SESSIONS = "pinboard:{global}:sessions";

let logged: string[] = [];
beforeEach(() => {
  logged = [];
  vi.spyOn(console, "error").mockImplementation((...args: unknown[]) => void logged.push(args.map(String).join(" ")));
});
afterEach(() => {
  vi.restoreAllMocks();
});

/** `count` ids per bucket in `buckets`, in bucket order. */
function idsIn(buckets: number[], count: number): string[] {
  const out: string[] = [];
  for (const b of buckets) {
    for (let i = 0, found = 0; found < count; i++) {
      const id = `held-${b}-${i}`;
      if (keys.bucketOf(id) !== b) continue;
      out.push(id);
      found++;
    }
  }
  return out;
}

describe("a register whose reclaim fails in one bucket", () => {
  it("answers 500 internal error, and leaves no mirror, list entry, record or re-bound row of it", async () => {
    const clientId = "undo-client";
    const prev = await registerOk(pb, token, registerBody(worker, { clientId }));
    const held = idsIn([0, 5, 11], 3);
    for (const id of held) await putRow(t, "/threads", id, { sessionId: prev.sessionId, epoch: "41" });
    // Bucket 7's placements hash of /threads is a string: HGET on it fails.
    const broken = keys.placements(7, SINGLE_ENV, "/threads");
    await t.redis.client.set(broken, "not a hash");
    const [victim] = idsIn([7], 1);

    const body = registerBody(worker, {
      clientId,
      prevSessionId: prev.sessionId,
      instances: { "/threads": [...held, victim!] },
    });
    const res = await pb.call("POST", "/registry/register", { token, body });
    expect({ status: res.status, body: await res.json() }).toEqual({ status: 500, body: { error: "internal error" } });

    // Nothing a resolve reads names the failed session: no mirror, no list entry, no record.
    const sessions = Object.keys(await t.redis.client.hgetall(SESSIONS));
    expect(sessions).toEqual([]);
    for (const b of keys.allBuckets()) {
      expect(await t.redis.client.hkeys(keys.workers(b)), `bucket ${b}`).toEqual([]);
      expect(await t.redis.client.hkeys(`pinboard:{${b}}:nsw:/threads`), `bucket ${b}`).toEqual([]);
    }
    expect(await t.redis.hget("pinboard:{global}:clients", clientId)).toBeNull();
    // The rows the other buckets' reclaims had re-bound are the previous session's again.
    for (const id of held)
      expect(await getRow(t, "/threads", id)).toEqual({
        sessionId: prev.sessionId,
        epoch: "41",
        expiry: "",
        hostname: "",
        tag: "",
      });

    const lines = logged.join("\n");
    expect(lines).toContain('"msg":"register undone"');
    expect(lines).toContain('"msg":"unhandled error"');
    expect(lines).toMatch(/WRONGTYPE/);
    expect(lines).not.toContain(worker.secret);
    expect(lines).not.toContain(ACCOUNT);
    expect(lines).not.toContain("command was");

    // Once the key is repaired, the worker's retry reclaims the rows the undo gave back.
    await t.redis.client.del(broken);
    const retry = await registerOk(pb, token, {
      ...registerBody(worker, {
        clientId,
        prevSessionId: prev.sessionId,
        instances: { "/threads": [...held, victim!] },
      }),
    });
    expect(retry.duplicates).toEqual([{ ns: "/threads", id: victim }]);
    for (const id of held) expect((await getRow(t, "/threads", id))!.sessionId).toBe(retry.sessionId);
  });
});
