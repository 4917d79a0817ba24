import { Agent, request } from "node:http";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { Keys } from "../../src/redis/keys.ts";
import { type Fleet, startFleet } from "../support/fleet.ts";

/**
 * Concurrent first requests for one id: the resolve script is atomic per (env, namespace, id),
 * so however many race, exactly one placement is minted and every request reaches its owner at
 * that epoch. Three workers and a different client address per request (X-Forwarded-For from
 * a trusted proxy, so each request has its own affinity key) make a split placement possible
 * if atomicity were broken.
 */

const keys = new Keys("pinboard:", 16);
let fleet: Fleet;

beforeAll(async () => {
  fleet = await startFleet({ workers: 3, env: { PINBOARD_TRUSTED_PROXIES: "127.0.0.1" } });
  await fleet.skipColdStart();
});
afterAll(() => fleet?.close());

interface Answer {
  status: number;
  body: { epoch: string; id: string; attestation: { aud: string }; headers: Record<string, string> };
}

/** One GET on its own TCP connection (a fresh agent per request: no socket is ever shared). */
function getOnNewConnection(url: string, headers: Record<string, string>): Promise<Answer> {
  return new Promise((resolve, reject) => {
    const agent = new Agent({ keepAlive: false, maxSockets: 1 });
    const req = request(url, { agent, headers }, (res) => {
      let text = "";
      res.setEncoding("utf8");
      res.on("data", (chunk: string) => (text += chunk));
      res.on("end", () => {
        agent.destroy();
        try {
          resolve({ status: res.statusCode ?? 0, body: JSON.parse(text) as Answer["body"] });
        } catch (err) {
          reject(new Error(`status ${res.statusCode}: ${text} (${String(err)})`));
        }
      });
    });
    req.on("error", reject);
    req.end();
  });
}

describe("concurrent first requests for one id", () => {
  for (const id of ["race-1", "race-2", "race-3"]) {
    it(`50 at once for ${id}: all 200, one placement row, one owner, one epoch`, async () => {
      const answers = await Promise.all(
        Array.from({ length: 50 }, (_, i) =>
          getOnNewConnection(`${fleet.pb.url}/echo/${id}?n=${i}`, { "x-forwarded-for": `10.0.${i}.1` }),
        ),
      );
      expect(answers.map((a) => a.status)).toEqual(Array(50).fill(200));
      const epochs = new Set(answers.map((a) => a.body.epoch));
      const owners = new Set(answers.map((a) => a.body.attestation.aud));
      const forwardedFor = new Set(answers.map((a) => a.body.headers["x-forwarded-for"]));
      expect(epochs.size).toBe(1);
      expect(owners.size).toBe(1);
      expect(forwardedFor).toEqual(new Set(["127.0.0.1"])); // replaced by the observed peer
      const [epoch] = epochs;
      const [owner] = owners;
      // The epoch the worker saw is the Pinboard-Epoch it was sent.
      for (const a of answers) expect(a.body.headers["pinboard-epoch"]).toBe(epoch);

      const placements = await fleet.t.redis.hgetall(keys.placements(await keys.bucketOf(id), "*", "/echo"));
      const rows = Object.entries(placements).filter(([field]) => field === id);
      expect(rows).toHaveLength(1);
      expect(rows[0]![1].split("\n").slice(0, 2)).toEqual([owner, epoch]);

      // Exactly one worker holds the instance, at that epoch, and it served all 50.
      const holders = fleet.workers.filter((w) => w.worker.instances().some((i) => i.ns === "/echo" && i.id === id));
      expect(holders).toHaveLength(1);
      expect(holders[0]!.worker.sessionId).toBe(owner);
      expect(holders[0]!.worker.instances().find((i) => i.id === id)!.epoch).toBe(epoch);
      expect(Math.max(...answers.map((a) => (a.body as unknown as { hits: number }).hits))).toBe(50);
      // No overwritten marker: nothing was ever re-placed.
      expect(await fleet.t.redis.hget(keys.overwritten(await keys.bucketOf(id)), `*\n/echo\n${id}`)).toBeNull();
    });
  }
});
