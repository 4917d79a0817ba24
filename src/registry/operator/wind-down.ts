import { checkEnv, type PinboardClaim } from "../../auth/claims.ts";
import type { AppDeps } from "../../deps.ts";
import { badRequest, forbidden } from "../../errors.ts";
import { SINGLE_ENV } from "../../redis/keys.ts";
import { windDownRows } from "../../redis/scripts/index.ts";
import { queueWindDowns } from "../control-queue.ts";
import { isId, isNamespace } from "../names.ts";
import { envOf } from "../record.ts";
import { readSession } from "../sessions.ts";
import type { WindDownBody } from "./schemas.ts";
import { placementScopeError } from "./scope.ts";

/**
 * POST /registry/wind_down: stamps the wind-down expiry at now + max(deadline × 1000, leaseTtl)
 * (null clears it) and queues a wind_down control message to each owner. With an id it acts on
 * that placement, judged on the owner record's hostname and envs[ns] (or the row's hostname
 * when the owner is gone); without one on every placement of the (env, namespace).
 */
export async function windDown(deps: AppDeps, claim: PinboardClaim, body: WindDownBody): Promise<{ queued: boolean | number }> {
  const { config, keys, redis } = deps;
  if (config.hostnameAware && body.env == null) throw badRequest("env is required in hostname-aware mode");
  if (!config.hostnameAware && body.env != null) throw badRequest("env requires hostname-aware mode");
  if (!isNamespace(body.namespace)) throw badRequest("invalid namespace");
  if (body.id != null && !isId(body.id)) throw badRequest("invalid id");
  const ns = body.namespace;
  const env = body.env?.toLowerCase() ?? SINGLE_ENV;
  const now = await redis.timeMs();
  const deadlineAt = body.deadline === null ? null : now + Math.max(body.deadline * 1000, config.leaseTtlMs);
  const stamp = deadlineAt === null ? "" : String(deadlineAt);

  if (body.id != null) {
    const bucket = await keys.bucketOf(body.id);
    const key = keys.placements(bucket, env, ns);
    const raw = await redis.hget(key, body.id);
    if (raw === null) {
      const denied = placementScopeError(claim, { ns, hostname: "", env }, false);
      if (denied) throw forbidden(denied);
      return { queued: false };
    }
    const [sessionId = "", , , rowHost = ""] = raw.split("\n");
    const owner = await readSession(deps, sessionId);
    const target = owner ? { ns, hostname: owner.hostname, env: envOf(owner, ns) } : { ns, hostname: rowHost, env };
    const denied = placementScopeError(claim, target, config.hostnameAware);
    if (denied) throw forbidden(denied);
    const stamped = (await redis.run(windDownRows, [key], [stamp, body.id])) as string[];
    if (stamped.length === 0) return { queued: false };
    await queueWindDowns(deps, stamped[0]!, [{ ns, id: body.id, deadlineAt }]);
    return { queued: true };
  }

  const denied = placementScopeError(claim, { ns, hostname: "", env }, false) ?? (config.hostnameAware ? checkEnv(claim, env) : null);
  if (denied) throw forbidden(denied);
  const replies = (await redis.runMany(
    keys.allBuckets().map((b) => ({ script: windDownRows, keys: [keys.placements(b, env, ns)], args: [stamp] })),
  )) as string[][];
  const byOwner = new Map<string, Array<{ ns: string; id: string; deadlineAt: number | null }>>();
  let count = 0;
  for (const flat of replies) {
    for (let i = 0; i < flat.length; i += 3) {
      const owner = flat[i]!;
      if (!byOwner.has(owner)) byOwner.set(owner, []);
      byOwner.get(owner)!.push({ ns, id: flat[i + 1]!, deadlineAt });
      count++;
    }
  }
  await Promise.all([...byOwner].map(([owner, orders]) => queueWindDowns(deps, owner, orders)));
  return { queued: count };
}
