import type { AppDeps } from "../deps/app-deps.ts";
import type { RedisReply, ScriptCall } from "../redis/port.ts";
import { redisErrorText } from "../redis/redis-errors.ts";
import { queueWindDowns } from "./control-queue.ts";
import {
  deregisterSession,
  parseRebindRows,
  REBIND_CHUNK_IDS,
  rebindRowsCalls,
  registerBucketCall,
} from "./lua/index.ts";
import { unmirrorEverywhere } from "./mirror.ts";
import { envOf, type WorkerRecord } from "./record.ts";

/** What this module uses of the app's dependencies. */
export type RegisterFanoutDeps = Pick<AppDeps, "config" | "redis" | "keys" | "log">;

/**
 * The part of a register after its fleet-wide write (register-session): the record's mirror in
 * every bucket, the reclaim of the instances the worker still holds, and the wind_downs of the
 * reclaimed rows that carry one. It either completes, or is undone (undoRegistration) before the
 * register answers its error: a failed register leaves nothing a resolve can see.
 */

/** An instance by its namespace and id (the worker library's InstanceRef, src/pinned/durability.ts). */
export interface InstanceRef {
  ns: string;
  id: string;
}

/**
 * Mirrors the record into every bucket and reclaims `instances`: rows owned by prevSessionId
 * re-bind to the new session keeping their epoch, every other id is a duplicate. A bucket's first
 * REBIND_CHUNK_IDS ids re-bind in its register-bucket call, atomically with the mirror that
 * replaces the previous session's; the rest after it, through rebind-rows. Answers the duplicates.
 */
export async function mirrorAndReclaim(
  deps: RegisterFanoutDeps,
  record: WorkerRecord,
  json: string,
  instances: readonly InstanceRef[],
  prevSessionId: string,
): Promise<InstanceRef[]> {
  const { keys, config } = deps;
  const byBucket = new Map<number, Array<{ env: string; ns: string; id: string }>>();
  for (const { ns, id } of instances) {
    const bucket = keys.bucketOf(id);
    let rows = byBucket.get(bucket);
    if (!rows) byBucket.set(bucket, (rows = []));
    rows.push({ env: envOf(record, ns), ns, id });
  }
  const mirrors = keys.allBuckets().map((bucket) =>
    registerBucketCall(keys, {
      bucket,
      record,
      json,
      leaseTtlMs: config.leaseTtlMs,
      prevSessionId,
      rows: (byBucket.get(bucket) ?? []).slice(0, REBIND_CHUNK_IDS),
    }),
  );
  const rest = [...byBucket.values()].flatMap((rows) => rows.slice(REBIND_CHUNK_IDS));
  const more =
    rest.length === 0
      ? []
      : rebindRowsCalls(keys, {
          from: prevSessionId,
          to: record.sessionId,
          guardClientId: record.clientId,
          rows: rest,
        });

  const duplicates: InstanceRef[] = [];
  const windDowns: Array<{ ns: string; id: string; deadlineAt: number }> = [];
  const collect = (result: ReturnType<typeof parseRebindRows>) => {
    for (const duplicate of result.duplicates) duplicates.push(duplicate);
    for (const windDown of result.windDowns) windDowns.push(windDown);
  };
  for (const [i, reply] of (await settleAll(deps, mirrors)).entries()) {
    collect(parseRebindRows((reply as RedisReply[]).slice(1), mirrors[i]!));
  }
  for (const [i, reply] of (await settleAll(deps, more)).entries()) collect(parseRebindRows(reply, more[i]!));
  // A reclaimed row's wind-down re-queues to the new session, in calls of at most a chunk each.
  for (let start = 0; start < windDowns.length; start += REBIND_CHUNK_IDS) {
    await queueWindDowns(deps, record.sessionId, windDowns.slice(start, start + REBIND_CHUNK_IDS));
  }
  return duplicates;
}

/**
 * Undoes a registration whose mirror or reclaim failed: reclaimed rows go back to prevSessionId
 * (only rows the new session owns move), the record is dropped with its control queue, and every
 * bucket's mirror is removed behind a tombstone generation, so a mirror still in flight cannot
 * come back. Best effort: a step that cannot reach Redis is logged and skipped, and what it leaves
 * is a record nobody heartbeats, dead one lease TTL after the register and replaced in every bucket
 * by the client's next register.
 */
export async function undoRegistration(
  deps: RegisterFanoutDeps,
  record: WorkerRecord,
  instances: readonly InstanceRef[],
  prevSessionId: string,
): Promise<void> {
  const { keys, log } = deps;
  const step = async (name: string, work: () => Promise<unknown>) => {
    try {
      await work();
    } catch (err) {
      log.warn("register undo step failed", { sessionId: record.sessionId, step: name, error: redisErrorText(err) });
    }
  };
  if (prevSessionId !== "" && instances.length > 0) {
    const rows = instances.map(({ ns, id }) => ({ env: envOf(record, ns), ns, id }));
    await step("rows", () =>
      deps.redis.runMany(rebindRowsCalls(keys, { from: record.sessionId, to: prevSessionId, guardClientId: "", rows })),
    );
  }
  // The tombstone must outrank the record's own mirrors: deregister mints a newer generation.
  let generation = String(record.gen + 1);
  await step("record", async () => {
    const dropped = await deregisterSession(deps.redis, keys, { sessionId: record.sessionId });
    if (dropped.kind === "ok") generation = dropped.generation;
  });
  await step("mirrors", () => unmirrorEverywhere(deps, record, generation));
  log.warn("register undone", { sessionId: record.sessionId, clientId: record.clientId });
}

/**
 * Runs the calls concurrently (the adapters batch them) and waits for every one to settle before
 * answering, so that an undo never races a call still in flight; throws the first failure.
 */
async function settleAll(deps: RegisterFanoutDeps, calls: readonly ScriptCall[]): Promise<RedisReply[]> {
  const outcomes = await Promise.allSettled(calls.map((c) => deps.redis.run(c.script, c.keys, c.args)));
  const failed = outcomes.find((o): o is PromiseRejectedResult => o.status === "rejected");
  if (failed) throw failed.reason;
  return outcomes.map((o) => (o as PromiseFulfilledResult<RedisReply>).value);
}
