import type { AuditActor, AuditTarget } from "../audit/entry.ts";
import { recordAudit } from "../audit/trail.ts";
import type { PinboardClaim } from "../auth/claims.ts";
import { isId, isNamespace } from "../contract/names.ts";
import type { AppDeps } from "../deps/app-deps.ts";
import { badRequest, forbidden } from "../errors/pinboard-error.ts";
import { SINGLE_ENV } from "../redis/keys.ts";
import { queueWindDowns } from "../registry/control-queue.ts";
import type { WorkerRecord } from "../registry/record.ts";
import { readSession } from "../registry/sessions.ts";
import {
  parseWindDownRowsRead,
  parseWindDownRowsStamp,
  type WindDownRow,
  windDownRowsReadCall,
  windDownRowsStampCall,
} from "./lua/index.ts";
import type { WindDownBody } from "./schemas.ts";
import { requestScopeError, rowScopeError } from "./scope.ts";

/** What this module uses of the app's dependencies. */
export type WindDownDeps = Pick<AppDeps, "config" | "redis" | "keys" | "log">;

/** A row's owner can change between the read that judged it and the stamp: judge it again, this often at most. */
const MAX_ROUNDS = 3;
/** Ids per stamping script call (each call stays one atomic, one-slot script). */
const STAMP_BATCH = 500;

/** What a row is judged on: its id, its owner's session and the hostname it carries. */
type RowRef = WindDownRow;

type Order = { ns: string; id: string; deadlineAt: number | null };

/**
 * POST /registry/wind_down: stamps the wind-down expiry at now + max(deadline × 1000, leaseTtl)
 * (null clears it) and queues a wind_down control message to each owner.
 *
 * Scope. The request itself is judged first: its namespace, and in hostname-aware mode its env.
 * Then each row, on its owner record's hostname and envs[ns], or on the row's hostname (and the
 * request's env) when the record is gone. With an id, a row out of scope is a 403; a missing row
 * is judged as an ownerless row without a hostname, so an operator whose claim restricts
 * hostnames gets the same 403 "forbidden" whether or not the row exists. Without an id, rows out
 * of scope are left alone and not counted.
 *
 * Each stamp is a compare-and-set on the owner the row was judged by (wind-down-rows.ts); a row
 * whose owner changed meanwhile is read and judged again.
 *
 * Messages. Only rows with a live owner whose fence had not passed get one (not rows of a dead
 * owner, whose fence waits for the replacement owner, nor placeholder rows); `queued` counts the
 * messages queued (with an id: whether one was).
 *
 * The audit trail records it (wind_down, or clear_fence for deadline null) with the answer.
 */
export async function windDown(
  deps: WindDownDeps,
  claim: PinboardClaim,
  actor: AuditActor,
  body: WindDownBody,
): Promise<{ queued: boolean | number }> {
  const { queued, deadlineAt, hostname } = await windDownRows(deps, claim, body);
  const target: AuditTarget = {
    namespace: body.namespace,
    ...(body.id != null ? { id: body.id } : {}),
    ...(body.env != null ? { env: body.env.toLowerCase() } : {}),
    ...(hostname ? { hostname } : {}),
  };
  await recordAudit(deps, {
    kind: "action",
    ...(deadlineAt === null
      ? { type: "clear_fence", detail: { queued } }
      : { type: "wind_down", detail: { deadline: body.deadline, deadlineAt, queued } }),
    ...actor,
    target,
  });
  return { queued };
}

interface WindDownOutcome {
  queued: boolean | number;
  deadlineAt: number | null;
  /** With an id in hostname-aware mode: the hostname the placement was judged on. */
  hostname?: string;
}

async function windDownRows(deps: WindDownDeps, claim: PinboardClaim, body: WindDownBody): Promise<WindDownOutcome> {
  const { config } = deps;
  if (config.hostnameAware && body.env == null) throw badRequest("env is required in hostname-aware mode");
  if (!config.hostnameAware && body.env != null) throw badRequest("env requires hostname-aware mode");
  if (!isNamespace(body.namespace)) throw badRequest("invalid namespace");
  if (body.id != null && !isId(body.id)) throw badRequest("invalid id");
  const ns = body.namespace;
  const env = body.env?.toLowerCase() ?? SINGLE_ENV;
  const denied = requestScopeError(claim, ns, env, config.hostnameAware);
  if (denied) throw forbidden(denied);

  const now = await deps.redis.timeMs();
  const deadlineAt = body.deadline === null ? null : now + Math.max(body.deadline * 1000, config.leaseTtlMs);
  const stamp = deadlineAt === null ? "" : String(deadlineAt);
  const ctx: WindDownContext = { deps, claim, ns, env, stamp, owners: new Map() };

  if (body.id != null) {
    const { notified, hostname } = await windDownOne(ctx, body.id);
    const judgedOn = config.hostnameAware && hostname !== "" ? { hostname } : {};
    if (notified === null) return { queued: false, deadlineAt, ...judgedOn };
    await queueWindDowns(deps, notified, [{ ns, id: body.id, deadlineAt }]);
    return { queued: true, deadlineAt, ...judgedOn };
  }

  const { keys, redis } = deps;
  const buckets = keys.allBuckets();
  const reads = (await redis.runMany(buckets.map((bucket) => windDownRowsReadCall(keys, { bucket, env, ns })))).map(
    parseWindDownRowsRead,
  );
  const perBucket = await Promise.all(buckets.map((b, i) => windDownBucket(ctx, b, reads[i] ?? [])));
  const byOwner = new Map<string, Order[]>();
  let count = 0;
  for (const notified of perBucket) {
    for (const { sessionId, id } of notified) {
      let orders = byOwner.get(sessionId);
      if (!orders) byOwner.set(sessionId, (orders = []));
      orders.push({ ns, id, deadlineAt });
      count++;
    }
  }
  await Promise.all([...byOwner].map(([owner, orders]) => queueWindDowns(deps, owner, orders)));
  return { queued: count, deadlineAt };
}

interface WindDownContext {
  deps: WindDownDeps;
  claim: PinboardClaim;
  ns: string;
  env: string;
  stamp: string;
  /** Owner records read so far (null: the record is gone), shared by every bucket of one request. */
  owners: Map<string, Promise<WorkerRecord | null>>;
}

/**
 * One id: 403 when it is out of scope (or missing and its scope unknowable); the owner to notify
 * (or null) and the hostname the row was judged on ("" for none).
 */
async function windDownOne(ctx: WindDownContext, id: string): Promise<{ notified: string | null; hostname: string }> {
  const { deps, claim, ns, env } = ctx;
  const bucket = await deps.keys.bucketOf(id);
  const key = deps.keys.placements(bucket, env, ns);
  let hostname = "";
  for (let round = 0; round < MAX_ROUNDS; round++) {
    const raw = await deps.redis.hget(key, id);
    const row = raw === null ? null : refOf(id, raw);
    const owner = row ? await ownerOf(ctx, row.sessionId) : null;
    const denied = rowScopeError(claim, ns, env, row, owner, deps.config.hostnameAware);
    if (denied) throw forbidden(denied);
    if (!row) return { notified: null, hostname };
    hostname = owner?.hostname ?? row.hostname;
    const outcome = (await stampRows(ctx, bucket, [row])).get(id);
    if (outcome === "notify") return { notified: row.sessionId, hostname };
    if (outcome !== "changed") return { notified: null, hostname };
  }
  return { notified: null, hostname };
}

/** One bucket of a namespace-wide wind-down: stamps the rows in scope, returns the owners to notify. */
async function windDownBucket(ctx: WindDownContext, bucket: number, rows: RowRef[]): Promise<RowRef[]> {
  const { deps, claim, ns, env } = ctx;
  const key = deps.keys.placements(bucket, env, ns);
  const notified: RowRef[] = [];
  let pending = rows;
  for (let round = 0; round < MAX_ROUNDS && pending.length > 0; round++) {
    const judged = await Promise.all(pending.map(async (row) => ({ row, owner: await ownerOf(ctx, row.sessionId) })));
    const inScope = judged
      .filter(({ row, owner }) => rowScopeError(claim, ns, env, row, owner, deps.config.hostnameAware) === null)
      .map((j) => j.row);
    if (inScope.length === 0) break;
    const outcomes = await stampRows(ctx, bucket, inScope);
    const changed: string[] = [];
    for (const row of inScope) {
      const outcome = outcomes.get(row.id);
      if (outcome === "notify") notified.push(row);
      else if (outcome === "changed") changed.push(row.id);
    }
    const reread = await Promise.all(changed.map(async (id) => ({ id, raw: await deps.redis.hget(key, id) })));
    pending = reread.flatMap(({ id, raw }) => (raw === null ? [] : [refOf(id, raw)]));
  }
  return notified;
}

/**
 * Stamps the rows (compare-and-set on their owner and hostname): id → "notify" | "stamped" |
 * "changed"; gone ids are absent.
 */
async function stampRows(ctx: WindDownContext, bucket: number, rows: RowRef[]): Promise<Map<string, string>> {
  const { keys, redis } = ctx.deps;
  const calls = [];
  for (let i = 0; i < rows.length; i += STAMP_BATCH) {
    calls.push(
      windDownRowsStampCall(keys, {
        bucket,
        env: ctx.env,
        ns: ctx.ns,
        stamp: ctx.stamp,
        rows: rows.slice(i, i + STAMP_BATCH),
      }),
    );
  }
  const replies = await redis.runMany(calls);
  const outcomes = new Map<string, string>();
  for (const reply of replies) for (const [id, outcome] of parseWindDownRowsStamp(reply)) outcomes.set(id, outcome);
  return outcomes;
}

function ownerOf(ctx: WindDownContext, sessionId: string): Promise<WorkerRecord | null> {
  if (sessionId === "") return Promise.resolve(null);
  let owner = ctx.owners.get(sessionId);
  if (!owner) ctx.owners.set(sessionId, (owner = readSession(ctx.deps, sessionId)));
  return owner;
}

/** A stored row `sessionId \n epoch \n expiry \n hostname \n tag`, reduced to what scope is judged on. */
function refOf(id: string, raw: string): RowRef {
  const [sessionId = "", , , hostname = ""] = raw.split("\n");
  return { id, sessionId, hostname };
}
