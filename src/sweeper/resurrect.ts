import { parseInstanceMember } from "../contract/durable-index.ts";
import type { AppDeps } from "../deps/app-deps.ts";
import { bindingFor } from "../placement/bindings.ts";
import { Refusal } from "../placement/refusal.ts";
import { newSessionId } from "../registry/session-ids.ts";
import { type PageInPlaceholderInput, pageInPlaceholder, resurrection } from "./lua/index.ts";
import { budgetSpent, type SubrequestBudget } from "./subrequest-budget.ts";

/** What this module uses of the app's dependencies, and the pass's budget. */
export type ResurrectDeps = Pick<AppDeps, "config" | "redis" | "keys" | "log" | "durable"> & {
  budget: SubrequestBudget;
};

/** Requests of a resurrection page: the index page, the bindings, the placeholders, the cursor. */
const PAGE_COST = 4;

/**
 * After Redis lost everything (found by the missing incarnation key), pages the durability
 * index back in as ownerless placeholder rows, one HSCAN page per pass, so the durability sweep
 * places and wakes each durable instance. In hostname-aware mode the index's hostname is the
 * resurrection target and picks the env through its binding; an instance whose hostname has no
 * binding yet is retried by a later resurrection page only if it is still missing then. The
 * page's bindings and placeholders go concurrently (one request each on the REST adapter); the
 * stage runs only while it leaves `leave` (a fraction of the budget) to the stages after it.
 */
export async function sweepResurrection(deps: ResurrectDeps, batch: number, leave: number): Promise<number> {
  const { keys, redis, durable, budget } = deps;
  if (!budget.canSpend(1, leave)) return 0;
  try {
    const cursor = await resurrection(redis, keys, { step: "begin", incarnationId: newSessionId() });
    if (cursor === "" || !budget.canSpend(PAGE_COST, leave)) return 0;
    const [next, page] = await durable.redis.hscan(durable.keys.instances, cursor, batch);
    const placeholders = await Promise.all(page.map(([member, hostname]) => placeholderOf(deps, member, hostname)));
    const written = await Promise.all(
      placeholders.flatMap((p) => (p === null ? [] : [pageInPlaceholder(redis, keys, p)])),
    );
    await resurrection(redis, keys, { step: "advance", cursor: next });
    const paged = written.filter(Boolean).length;
    if (paged > 0) deps.log.info("resurrection paged in durable instances", { paged, done: next === "0" });
    return paged;
  } catch (err) {
    if (!budgetSpent(err)) throw err;
    return 0;
  }
}

/** The placeholder row of one index entry; null for a member that names no instance or a hostname without a binding. */
async function placeholderOf(
  deps: ResurrectDeps,
  member: string,
  hostname: string,
): Promise<PageInPlaceholderInput | null> {
  const { config, keys } = deps;
  const target = parseInstanceMember(member);
  if (!target) return null;
  let env: string;
  try {
    env = (await bindingFor(deps, config.hostnameAware ? hostname : "", target.ns)).env;
  } catch (err) {
    if (err instanceof Refusal) return null;
    throw err;
  }
  return {
    bucket: keys.bucketOf(target.id),
    env,
    ns: target.ns,
    id: target.id,
    hostname: config.hostnameAware ? hostname : "",
  };
}
