import { parseInstanceMember } from "../contract/durable-index.ts";
import type { AppDeps } from "../deps.ts";
import { bindingFor } from "../placement/bindings.ts";
import { Refusal } from "../placement/refusal.ts";
import { newSessionId } from "../registry/session-ids.ts";
import { pageInPlaceholder, resurrection } from "./lua/index.ts";

/** What this module uses of the app's dependencies. */
export type ResurrectDeps = Pick<AppDeps, "config" | "redis" | "keys" | "log" | "durable">;

/**
 * After Redis lost everything (found by the missing incarnation key), pages the durability
 * index back in as ownerless placeholder rows, one HSCAN page per pass, so the durability sweep
 * places and wakes each durable instance. In hostname-aware mode the index's hostname is the
 * resurrection target and picks the env through its binding; an instance whose hostname has no
 * binding yet is retried by a later resurrection page only if it is still missing then.
 */
export async function sweepResurrection(deps: ResurrectDeps, budget: number): Promise<number> {
  const { keys, redis, durable, config } = deps;
  const cursor = await resurrection(redis, keys, { step: "begin", incarnationId: newSessionId() });
  if (cursor === "") return 0;
  const [next, page] = await durable.redis.hscan(durable.keys.instances, cursor, budget);
  let paged = 0;
  for (const [member, hostname] of page) {
    const target = parseInstanceMember(member);
    if (!target) continue;
    let env: string;
    try {
      env = (await bindingFor(deps, config.hostnameAware ? hostname : "", target.ns)).env;
    } catch (err) {
      if (err instanceof Refusal) continue;
      throw err;
    }
    const b = await keys.bucketOf(target.id);
    const placeholder = {
      bucket: b,
      env,
      ns: target.ns,
      id: target.id,
      hostname: config.hostnameAware ? hostname : "",
    };
    if (await pageInPlaceholder(redis, keys, placeholder)) paged++;
  }
  await resurrection(redis, keys, { step: "advance", cursor: next });
  if (paged > 0) deps.log.info("resurrection paged in durable instances", { paged, done: next === "0" });
  return paged;
}
