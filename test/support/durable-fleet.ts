/**
 * The real Pinboard process in front of identity-counter worker processes with a Redis durability
 * store, as the traffic tests (worker death, graceful handover) drive it: the sweeper off (the moves
 * measured are the ones client traffic drives through resolve), each client loop posing as its own
 * address (so client-IP affinity spreads the ids over the workers), and a fleet that has been up
 * for a while (no cold-start quarantine).
 */
import { durableEnv } from "./durability.ts";
import { type PinboardProcess, startPinboardProcess } from "./pinboard-process.ts";
import { startTestRedis, type TestRedis } from "./redis.ts";
import { getRow } from "./rows.ts";
import { spawnDurableWorkers, type WorkerProcess } from "./spawn-worker.ts";

export interface DurableFleet {
  /** Pinboard's Redis. */
  t: TestRedis;
  /** The workers' durability store. */
  durable: TestRedis;
  pb: PinboardProcess;
  /** By worker name. */
  workers: Map<string, WorkerProcess>;
  /** Which worker's session each placed id's row names (`unknown <session>` for none of them). */
  owners(ns: string, ids: string[]): Promise<Map<string, string>>;
  stop(): Promise<void>;
}

export async function startDurableFleet(options: {
  names: string[];
  clientPrefix: string;
  leaseMs: number;
  env?: Record<string, string>;
}): Promise<DurableFleet> {
  const t = await startTestRedis();
  const durable = await startTestRedis();
  const pb = await startPinboardProcess({
    redis: t,
    env: {
      PINBOARD_LEASE_TTL_MS: String(options.leaseMs),
      PINBOARD_SWEEP_INTERVAL_MS: "3600000",
      ...options.env,
      PINBOARD_TRUSTED_PROXIES: "127.0.0.1,::1,::ffff:127.0.0.1",
    },
  });
  const workers = await spawnDurableWorkers(options.names, {
    pinboardUrl: pb.url,
    credential: await pb.workerCredential(),
    clientPrefix: options.clientPrefix,
    durableEnv: durableEnv(durable),
  });
  for (let b = 0; b < 16; b++) await t.redis.client.set(`pinboard:{${b}}:boot_time`, "0");
  return {
    t,
    durable,
    pb,
    workers,
    async owners(ns, ids) {
      const bySession = new Map([...workers].map(([name, w]) => [w.sessionId, name]));
      const owners = new Map<string, string>();
      for (const id of ids) {
        const row = await getRow(t, ns, id);
        if (row) owners.set(id, bySession.get(row.sessionId) ?? `unknown ${row.sessionId}`);
      }
      return owners;
    },
    async stop() {
      await Promise.all([...workers.values()].map((w) => w.kill()));
      await pb.stop();
      await durable.stop();
      await t.stop();
    },
  };
}

/** One increment of a durable counter through Pinboard, sent as from `clientAddress`. */
export function incrementCounter(pbUrl: string, id: string, clientAddress: string): Promise<Response> {
  return fetch(`${pbUrl}/counter/${id}/increment`, {
    method: "POST",
    headers: { "x-forwarded-for": clientAddress },
    signal: AbortSignal.timeout(10_000),
  });
}

/**
 * A client loop per id: one request at a time, as a careful client of a read-modify-write counter
 * sends them; a short pause after a failure (`send` answers false), none after a success.
 */
export function clientLoops(ids: string[], send: (id: string) => Promise<boolean>): { stop(): Promise<void> } {
  let running = true;
  const loops = ids.map(async (id) => {
    while (running) {
      if (!(await send(id))) await new Promise((r) => setTimeout(r, 20));
    }
  });
  return {
    async stop() {
      running = false;
      await Promise.all(loops);
    },
  };
}
