import {
  createWorker,
  type InstanceClass,
  type PinnedWorker,
  type RedisDurabilityStore,
  type WorkerOptions,
} from "../../src/pinned/index.ts";
import type { Listening } from "../../src/pinned/node-server.ts";
import { durableStore } from "./durability.ts";
import { Echo } from "./echo-instance.ts";
import { type PinboardProcess, startPinboardProcess } from "./pinboard-process.ts";
import { startTestRedis, type TestRedis, testRedisOnCluster } from "./redis.ts";
import type { RedisCluster } from "./redis-cluster.ts";
import { Counter } from "./sample-instances.ts";
import { useForFile } from "./use-for-file.ts";

export interface FleetWorker {
  worker: PinnedWorker;
  listening: Listening;
  stop(): Promise<void>;
}

export interface Fleet {
  t: TestRedis;
  pb: PinboardProcess;
  workers: FleetWorker[];
  addWorker(overrides?: Partial<WorkerOptions>): Promise<FleetWorker>;
  /** A fleet that has been up for a while: every bucket's cold-start window is over. */
  skipColdStart(): Promise<void>;
  close(): Promise<void>;
}

const quietLogger = { info: () => {}, warn: () => {}, error: () => {} };

/**
 * A private Redis (or the given Redis Cluster, which the caller stops), the real Pinboard Node
 * entry as a process, and workers built on the worker library, listening on loopback and
 * registered with that Pinboard.
 */
export async function startFleet(
  options: {
    workers?: number;
    env?: Record<string, string>;
    namespaces?: Record<string, InstanceClass>;
    worker?: Partial<WorkerOptions>;
    cluster?: RedisCluster;
    /** Node flags of the Pinboard process. */
    nodeArgs?: string[];
    /** Modules the Pinboard process imports before its entry (startPinboardProcess's preloads). */
    preloads?: string[];
  } = {},
): Promise<Fleet> {
  const t = options.cluster ? testRedisOnCluster(options.cluster) : await startTestRedis();
  const pb = await startPinboardProcess({
    redis: t,
    env: options.env,
    nodeArgs: options.nodeArgs,
    preloads: options.preloads,
  });
  const token = await pb.workerCredential();
  const shards = Number(options.env?.PINBOARD_SHARDS ?? 16);
  const prefix = options.env?.PINBOARD_PREFIX ?? "pinboard:";
  const fleet: Fleet = {
    t,
    pb,
    workers: [],
    async addWorker(overrides = {}) {
      const worker = createWorker({
        // With PINBOARD_ADMIN_PORT the registry is on the admin listener.
        pinboardUrl: pb.adminUrl ?? pb.url,
        credential: token,
        namespaces: options.namespaces ?? { "/echo": Echo },
        logger: quietLogger,
        ...options.worker,
        ...overrides,
      });
      const listening = await worker.listen({ port: 0 });
      await worker.start();
      const entry: FleetWorker = {
        worker,
        listening,
        async stop() {
          await worker.stop().catch(() => {});
          await listening.close();
        },
      };
      fleet.workers.push(entry);
      return entry;
    },
    async skipColdStart() {
      for (let b = 0; b < shards; b++) await t.redis.client.set(`${prefix}{${b}}:boot_time`, "0");
    },
    async close() {
      await Promise.all(fleet.workers.map((w) => w.stop()));
      await pb.stop();
      await t.stop();
    },
  };
  for (let i = 0; i < (options.workers ?? 1); i++) await fleet.addWorker();
  return fleet;
}

/** A fleet of no workers yet, serving the sample Counter under a lease of `leaseMs`, past its cold start. */
export async function startCounterFleet(leaseMs: number): Promise<Fleet> {
  const fleet = await startFleet({
    workers: 0,
    env: { PINBOARD_LEASE_TTL_MS: String(leaseMs) },
    namespaces: { "/counter": Counter },
  });
  await fleet.skipColdStart();
  return fleet;
}

/** startCounterFleet for the whole test file, with an operator credential of its Pinboard; closed after the file. */
export function useCounterFleet(leaseMs: number, ready: (f: { fleet: Fleet; operator: string }) => void): void {
  useForFile(
    async () => {
      const fleet = await startCounterFleet(leaseMs);
      return { fleet, operator: await fleet.pb.operatorCredential() };
    },
    (f) => f.fleet.close(),
    ready,
  );
}

export interface OneWorkerFleet {
  fleet: Fleet;
  /** The one worker, its instances' state in `store`. */
  worker: FleetWorker;
  durable: TestRedis;
  store: RedisDurabilityStore;
  close(): Promise<void>;
}

/**
 * A fleet of one worker (`clientId`) serving `namespaces` under a lease of `leaseMs`, past its
 * cold start, its instances' durable state in a Redis of its own.
 */
export async function startOneWorkerFleet(options: {
  leaseMs: number;
  namespaces: Record<string, InstanceClass>;
  clientId: string;
}): Promise<OneWorkerFleet> {
  const durable = await startTestRedis();
  const store = durableStore(durable);
  const fleet = await startFleet({
    workers: 0,
    env: { PINBOARD_LEASE_TTL_MS: String(options.leaseMs) },
    namespaces: options.namespaces,
  });
  const worker = await fleet.addWorker({ durability: store, clientId: options.clientId });
  await fleet.skipColdStart();
  return {
    fleet,
    worker,
    durable,
    store,
    async close() {
      await fleet.close();
      await store.close();
      await durable.stop();
    },
  };
}
