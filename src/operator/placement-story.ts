import { checkEnv, checkNamespace, type PinboardClaim } from "../auth/claims.ts";
import { instanceMember } from "../contract/durable-index.ts";
import { isId, isNamespace } from "../contract/names.ts";
import type { AppDeps } from "../deps/app-deps.ts";
import { badRequest, notFound, type PinboardError } from "../errors/pinboard-error.ts";
import { SINGLE_ENV } from "../redis/keys.ts";
import type { WorkerRecord } from "../registry/record.ts";
import { readSession } from "../registry/sessions.ts";
import { rowScopeError } from "./scope.ts";
import { statsInstances, workerStats } from "./worker-stats.ts";

/** What this module uses of the app's dependencies. */
export type PlacementStoryDeps = Pick<
  AppDeps,
  "config" | "redis" | "keys" | "durable" | "now" | "fetch" | "runtime" | "secrets"
>;

export interface PlacementQuery {
  ns: string;
  id: string;
}

/** A row of one env with what the story tells of it. */
interface FoundRow {
  env: string;
  sessionId: string;
  epoch: string;
  expiry: string;
  hostname: string;
  tag: string;
  /** The epoch of the id's overwritten marker (a durability wake is due), or null. */
  overwritten: string | null;
  owner: WorkerRecord | null;
}

/** The same answer for a missing row and one the claim may not see. */
const placementNotFound = (): PinboardError => notFound("placement not found");

/** 400 ns is required / invalid namespace / id is required / invalid id. */
export function parsePlacementQuery(query: Record<string, string | undefined>): PlacementQuery {
  const { ns, id } = query;
  if (ns === undefined || ns === "") throw badRequest("ns is required");
  if (!isNamespace(ns)) throw badRequest("invalid namespace");
  if (id === undefined || id === "") throw badRequest("id is required");
  if (!isId(id)) throw badRequest("invalid id");
  return { ns, id };
}

/**
 * GET /registry/placement?ns=&id= (an extension, for the console's explorer): the id's row in each
 * env of the namespace the claim covers, read at the id's bucket (no scan), with its owner (live
 * or dead), epoch, wind-down fence, tag, overwritten marker, durable alarm, and what the live
 * owner's /_pinned/stats says of the instance. Rows are judged as wind_down judges them
 * (rowScopeError), so a row the claim may not see is absent, and an id without a visible row is
 * 404 whether or not rows exist.
 */
export async function placementStory(deps: PlacementStoryDeps, claim: PinboardClaim, query: PlacementQuery) {
  const { ns, id } = query;
  // Every row would be judged out below: this only spares the reads.
  if (checkNamespace(claim, ns) !== null) throw placementNotFound();
  const aware = deps.config.hostnameAware;
  const [now, rows, alarm] = await Promise.all([
    deps.redis.timeMs(),
    readRows(deps, claim, query),
    alarmOf(deps, query),
  ]);
  const visible = rows.filter(
    (r) => rowScopeError(claim, ns, r.env, { hostname: r.hostname }, r.owner, aware) === null,
  );
  if (visible.length === 0) throw placementNotFound();
  const instances = new Map<string, Promise<Record<string, unknown> | null>>();
  const instanceOf = (owner: WorkerRecord) => {
    let found = instances.get(owner.sessionId);
    if (!found) instances.set(owner.sessionId, (found = ownerInstance(deps, owner, query)));
    return found;
  };
  const placements = await Promise.all(
    visible.map(async (r) => {
      const live = r.owner !== null && r.owner.expiry > now;
      const instance = live && r.owner ? await instanceOf(r.owner) : null;
      return story(r, { ns, id, now, aware, live, alarm, instance });
    }),
  );
  return { placements };
}

/**
 * The id's rows of every env the claim covers: in single mode the one space; hostname-aware, the
 * envs the bucket's `spaces` set lists for the namespace. With each row its overwritten marker
 * and its owner's record (null when gone).
 */
async function readRows(
  deps: PlacementStoryDeps,
  claim: PinboardClaim,
  { ns, id }: PlacementQuery,
): Promise<FoundRow[]> {
  const { keys, redis, config } = deps;
  const bucket = keys.bucketOf(id);
  const envs = config.hostnameAware
    ? (await redis.smembers(keys.spaces(bucket)))
        .map((space) => space.split("\n"))
        .filter(([env = "", spaceNs]) => spaceNs === ns && checkEnv(claim, env) === null)
        .map(([env = ""]) => env)
        .sort()
    : [SINGLE_ENV];
  const read = await Promise.all(
    envs.map(async (env) => {
      const [raw, overwritten] = await Promise.all([
        redis.hget(keys.placements(bucket, env, ns), id),
        redis.hget(keys.overwritten(bucket), `${env}\n${ns}\n${id}`),
      ]);
      if (raw === null) return null;
      const [sessionId = "", epoch = "", expiry = "", hostname = "", ...tag] = raw.split("\n");
      const owner = sessionId === "" ? null : await readSession(deps, sessionId);
      return { env, sessionId, epoch, expiry, hostname, tag: tag.join("\n"), overwritten, owner };
    }),
  );
  return read.filter((r) => r !== null);
}

/** The due time the worker library's durable index lists for the instance (advisory), or null. */
async function alarmOf(deps: PlacementStoryDeps, { ns, id }: PlacementQuery): Promise<number | null> {
  const [at] = await deps.durable.redis.zmscore(deps.durable.keys.alarms, [instanceMember(ns, id)]);
  return at ?? null;
}

/** The owner's `instances` item for the id, null when it holds none, or `unreachable`. */
async function ownerInstance(
  deps: PlacementStoryDeps,
  owner: WorkerRecord,
  { ns, id }: PlacementQuery,
): Promise<Record<string, unknown> | null> {
  const stats = await workerStats(deps, owner);
  if (stats === null) return { error: "unreachable" };
  return statsInstances(stats).find((item) => item.ns === ns && item.id === id) ?? null;
}

interface StoryContext extends PlacementQuery {
  now: number;
  aware: boolean;
  live: boolean;
  alarm: number | null;
  instance: Record<string, unknown> | null;
}

function story(r: FoundRow, c: StoryContext) {
  const deadline = r.expiry === "" ? undefined : Number(r.expiry);
  return {
    namespace: c.ns,
    id: c.id,
    env: c.aware ? r.env : null,
    hostname: c.aware ? r.hostname || r.owner?.hostname || null : null,
    sessionId: r.sessionId,
    clientId: r.owner?.clientId ?? null,
    owner: c.live ? ("live" as const) : ("dead" as const),
    epoch: r.epoch === "" ? null : r.epoch,
    ...(deadline !== undefined ? { expiry: deadline } : {}),
    ...(r.tag !== "" ? { tag: r.tag } : {}),
    fence: deadline === undefined ? ("none" as const) : deadline > c.now ? ("pending" as const) : ("passed" as const),
    overwritten: r.overwritten,
    alarm: c.alarm,
    instance: c.instance,
  };
}
