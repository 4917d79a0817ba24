/**
 * A worker process of the chaos campaign (run.ts starts 3–5 of them), built on the worker
 * library with the Redis durability store, as a user's worker would be:
 *
 *   /lists/{k}     POST …/append?v=<value> appends to the instance's list (read from storage once,
 *                  kept in memory, written through: a read-modify-write), GET … reads it
 *   /counters/{k}  POST …/incr adds one to a counter the same way, GET … reads it
 *
 * Every answer carries the instance's epoch and this worker's CLIENT_ID. Appends to keys named
 * `u…` are also written to the "user database" (USER_DB_URL, another Redis) through FencedRedis.
 * Each request served is logged as one JSON line to SERVED_LOG, each user-database write to
 * USER_DB_LOG, each refusal of a protection layer to layers.jsonl beside them, all synchronously
 * (sync-log.ts). CHAOS_LAYERS names the layers kept on (layers.ts, worker-layers.ts; NO_FENCE=1:
 * none, the control run), so a worker woken past its lease serves what waited in its sockets as a
 * library without them would.
 */
import { dirname, join } from "node:path";
import { Redis } from "ioredis";
import {
  createWorker,
  FencedRedis,
  handleShutdownSignals,
  type Instance,
  RedisDurabilityStore,
  type RequestContext,
  StaleEpochError,
} from "../../src/pinned/index.ts";
import { workloadNamespaces } from "./chaos-workload-instances.ts";
import type { Served, UserDbWrite } from "./history.ts";
import { openLineLog } from "./sync-log.ts";
import { installWorkerClock, reportLeaseRenewals } from "./worker-clock.ts";
import { layersFromEnv, WorkerLayers } from "./worker-layers.ts";

const env = process.env;
const WORKER = env.CLIENT_ID!;
const servedLog = openLineLog(env.SERVED_LOG!);
const userDbLog = openLineLog(env.USER_DB_LOG!);
const layers = new WorkerLayers(
  layersFromEnv(env),
  WORKER,
  openLineLog(join(dirname(env.SERVED_LOG!), "layers.jsonl")),
);
layers.installLeaseGuard();
const USER_FENCE = layers.on.has("user-fence");
const userDb = USER_FENCE ? undefined : new Redis(env.USER_DB_URL!, { maxRetriesPerRequest: 0 });
const fencedUserDb = USER_FENCE ? new FencedRedis({ redis: env.USER_DB_URL! }) : undefined;
/**
 * The user database is quoted the epoch zero-padded, w1 with one leading zero, w2 with two, …: the
 * fence compares numerically, so this is legal, and a fence that kept the zeros would let a stale
 * write in (or refuse a newer one), which the checker sees.
 */
const EPOCH_PADDING = "0".repeat(Number(WORKER.replace(/^\D+/, "")) || 1);
// The clock faults' injected clock, and the lease renewals the edge-timed pauses aim at.
const clock = installWorkerClock(env);
reportLeaseRenewals(clock);

function logServed(key: string, epoch: string, kind: Served["kind"], start: number): void {
  const entry: Served = { worker: WORKER, key, epoch, start, at: Date.now(), kind };
  servedLog(entry);
}

async function writeUserDb(key: string, placementEpoch: string, value: string): Promise<void> {
  const epoch = `${EPOCH_PADDING}${placementEpoch}`;
  const start = Date.now();
  const entry: UserDbWrite = { worker: WORKER, key, epoch, start, at: start, accepted: true };
  try {
    if (fencedUserDb) await fencedUserDb.write(`user:${key}`, epoch, ["RPUSH", value]);
    else await userDb!.rpush(`user:${key}`, value);
  } catch (err) {
    // Unknown: the write may have been taken before the connection failed.
    if (!(err instanceof StaleEpochError)) {
      userDbLog({ ...entry, at: Date.now(), accepted: false, error: String(err) });
      throw err;
    }
    entry.accepted = false;
  }
  entry.at = Date.now();
  userDbLog(entry);
  if (!entry.accepted) {
    layers.refused("user-fence", key, epoch);
    throw new Error(`user database refused epoch ${epoch} for ${key}`);
  }
}

/**
 * Whether this activation may still answer a read from memory (is-current): a read that waited
 * (for storage, or in a socket) while the process was paused past its lease must not answer
 * beside the new owner. Writes need no such check: the fences refuse them.
 */
const owner = (ctx: RequestContext) => layers.owner(ctx);
const notOwner = () => Response.json({ detail: "no longer the owner" }, { status: 503 });

/**
 * The instances are written the straightforward way, with no serialisation of their own: the
 * library's input gate keeps a read-modify-write exact (no other event runs while storage is
 * awaited), and its output gate holds each answer until the write before it is durable.
 */
class ChaosList implements Instance {
  private list?: string[];

  async fetch(request: Request, ctx: RequestContext): Promise<Response> {
    const start = Date.now();
    const key = `${ctx.ns}/${ctx.id}`;
    this.list ??= (await ctx.storage.get<string[]>("list")) ?? [];
    if (request.method === "GET") {
      // A list answers a read from memory, as a Durable Object would: no fence sees such a read,
      // so only the lease guard and is-current stop a zombie's (counters read the store first,
      // and meet the fenced read).
      if (!owner(ctx)) return notOwner();
      logServed(key, ctx.epoch, "read", start);
      return Response.json({ list: this.list, epoch: ctx.epoch, worker: WORKER });
    }
    const value = new URL(request.url).searchParams.get("v");
    if (request.method !== "POST" || ctx.path !== "/append" || !value)
      return new Response("bad request", { status: 400 });
    // The user database first: a zombie meets that fence before the library's own.
    if (ctx.id.startsWith("u")) await writeUserDb(key, ctx.epoch, value);
    // Memory first, then storage (as on Durable Objects): another append may have run while the
    // user database was awaited, so the list is read again here, not before that await.
    this.list = [...this.list, value];
    await ctx.storage.put("list", this.list);
    logServed(key, ctx.epoch, "append", start);
    return Response.json({ ok: true, epoch: ctx.epoch, worker: WORKER });
  }
}

class ChaosCounter implements Instance {
  private count?: number;

  async fetch(request: Request, ctx: RequestContext): Promise<Response> {
    const start = Date.now();
    this.count ??= (await ctx.storage.get<number>("n")) ?? 0;
    if (request.method === "GET") {
      // Through the store before the owner check: a process paused here meets the fenced read and
      // is-current on waking.
      await ctx.storage.get("n");
      if (!owner(ctx)) return notOwner();
      logServed(`${ctx.ns}/${ctx.id}`, ctx.epoch, "read", start);
      return Response.json({ counter: this.count, epoch: ctx.epoch, worker: WORKER });
    }
    if (request.method !== "POST" || ctx.path !== "/incr") return new Response("bad request", { status: 400 });
    const next = ++this.count;
    await ctx.storage.put("n", next);
    logServed(`${ctx.ns}/${ctx.id}`, ctx.epoch, "incr", start);
    return Response.json({ counter: next, epoch: ctx.epoch, worker: WORKER });
  }
}

const store = new RedisDurabilityStore({ redis: env.DURABLE_REDIS_URL! });
const worker = createWorker({
  pinboardUrl: env.PINBOARD_URL!,
  credential: env.CREDENTIAL!,
  clientId: WORKER,
  advertiseUrl: env.ADVERTISE_URL || undefined,
  namespaces: {
    "/lists": ChaosList,
    "/counters": ChaosCounter,
    // Their logs sit beside the served log (run.ts reads them there).
    ...workloadNamespaces({
      worker: WORKER,
      skipOwnerCheck: !layers.on.has("is-current"),
      socketLog: join(dirname(env.SERVED_LOG!), "sockets.jsonl"),
      alarmLog: join(dirname(env.SERVED_LOG!), "alarms.jsonl"),
    }),
  },
  durability: layers.store(store),
  now: clock.now,
  logger: {
    info: () => {},
    warn: (m, f) => console.error(`${new Date().toISOString()} warn ${m}`, JSON.stringify(f ?? {})),
    error: (m, f) => console.error(`${new Date().toISOString()} error ${m}`, JSON.stringify(f ?? {})),
  },
});
const listening = await worker.listen({ port: Number(env.PORT ?? 0) });
handleShutdownSignals(worker, { listening, graceMs: 1000 });
await worker.start();
console.log(`ready ${JSON.stringify({ worker: WORKER, url: listening.url })}`);
