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
 * USER_DB_LOG. NO_FENCE=1 is the control run: the durability store's fence is defeated (every
 * write quotes the stored epoch), the user database is written without one, and the library's
 * lapsed-lease guard is switched off, so a worker woken past its lease serves what waited in its
 * sockets as a library without fencing would.
 */
import { createWriteStream } from "node:fs";
import { dirname, join } from "node:path";
import { Redis } from "ioredis";
import {
  createWorker,
  type DurabilityStore,
  FencedRedis,
  handleShutdownSignals,
  type Instance,
  RedisDurabilityStore,
  type RequestContext,
  StaleEpochError,
} from "../../src/pinned/index.ts";
import { Lease } from "../../src/pinned/lease.ts";
import { workloadNamespaces } from "./chaos-workload-instances.ts";
import type { Served, UserDbWrite } from "./history.ts";

const env = process.env;
const WORKER = env.CLIENT_ID!;
const NO_FENCE = env.NO_FENCE === "1";
const servedLog = createWriteStream(env.SERVED_LOG!, { flags: "a" });
const userDbLog = createWriteStream(env.USER_DB_LOG!, { flags: "a" });
const userDb = NO_FENCE ? new Redis(env.USER_DB_URL!, { maxRetriesPerRequest: 0 }) : undefined;
const fencedUserDb = NO_FENCE ? undefined : new FencedRedis({ redis: env.USER_DB_URL! });
// The control run only: the guard has no switch in the library, on purpose.
if (NO_FENCE) Lease.prototype.lapsed = () => false;

function logServed(key: string, epoch: string, kind: Served["kind"], start: number): void {
  const entry: Served = { worker: WORKER, key, epoch, start, at: Date.now(), kind };
  servedLog.write(`${JSON.stringify(entry)}\n`);
}

async function writeUserDb(key: string, epoch: string, value: string): Promise<void> {
  let accepted = true;
  try {
    if (fencedUserDb) await fencedUserDb.write(`user:${key}`, epoch, ["RPUSH", value]);
    else await userDb!.rpush(`user:${key}`, value);
  } catch (err) {
    if (!(err instanceof StaleEpochError)) throw err;
    accepted = false;
  }
  const entry: UserDbWrite = { worker: WORKER, key, epoch, at: Date.now(), accepted };
  userDbLog.write(`${JSON.stringify(entry)}\n`);
  if (!accepted) throw new Error(`user database refused epoch ${epoch} for ${key}`);
}

/**
 * Whether this activation may still answer a read from memory: a read that waited (for the user
 * database, or in a socket) while the process was paused past its lease must not answer beside
 * the new owner. Writes need no such check: the fences refuse them (and the report counts the
 * user database's refusals). The control run skips the check, as it skips the fences.
 */
const owner = (ctx: RequestContext) => NO_FENCE || ctx.isCurrent();
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

/** The control run's store: every write quotes the epoch already stored, so the fence never refuses. */
function unfenced(store: RedisDurabilityStore): DurabilityStore {
  const quoted = async (ref: Parameters<DurabilityStore["epochOf"]>[0], epoch: string) =>
    (await store.epochOf(ref)) ?? epoch;
  return Object.assign(Object.create(store) as DurabilityStore, {
    activate: async (ref, epoch, info) => store.activate(ref, await quoted(ref, epoch), info),
    put: async (ref, epoch, entries) => store.put(ref, await quoted(ref, epoch), entries),
    delete: async (ref, epoch, keys) => store.delete(ref, await quoted(ref, epoch), keys),
    deleteAll: async (ref, epoch) => store.deleteAll(ref, await quoted(ref, epoch)),
  } satisfies Partial<DurabilityStore>);
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
      noFence: NO_FENCE,
      socketLog: join(dirname(env.SERVED_LOG!), "sockets.jsonl"),
      alarmLog: join(dirname(env.SERVED_LOG!), "alarms.jsonl"),
    }),
  },
  durability: NO_FENCE ? unfenced(store) : store,
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
