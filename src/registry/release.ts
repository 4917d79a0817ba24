import type { Principal } from "../auth/passport.ts";
import type { AppDeps } from "../deps.ts";
import { releaseRow, tagRow } from "../redis/scripts/index.ts";
import { envOf, type WorkerRecord } from "./record.ts";
import type { ReleaseBody, TagBody } from "./schemas.ts";
import { checkRowNamespace, ownedSession } from "./sessions.ts";

/**
 * Resolves and checks every session a row operation names before anything is written, so a
 * body with one bad item changes nothing. Release and tag skip the expiry check.
 */
async function rowOwners(
  deps: AppDeps,
  principal: Principal,
  items: ReadonlyArray<{ sessionId: string; namespace: string }>,
): Promise<Map<string, WorkerRecord>> {
  const records = new Map<string, WorkerRecord>();
  for (const item of items) {
    let record = records.get(item.sessionId);
    if (!record) {
      record = await ownedSession(deps, principal, item.sessionId, { live: false });
      records.set(item.sessionId, record);
    }
    checkRowNamespace(principal, record, item.namespace);
  }
  return records;
}

async function rowKey(deps: AppDeps, record: WorkerRecord, ns: string, id: string): Promise<string> {
  return deps.keys.placements(await deps.keys.bucketOf(id), envOf(record, ns), ns);
}

/**
 * POST /registry/release: compare-and-delete on sessionId and the quoted epoch. An item without
 * an epoch (absent or null) frees the session's row whatever its epoch; "" quotes an epoch-less
 * row and frees only that.
 */
export async function release(deps: AppDeps, principal: Principal, items: ReleaseBody): Promise<{ released: number }> {
  const owners = await rowOwners(deps, principal, items);
  const calls = await Promise.all(
    items.map(async (item) => ({
      script: releaseRow,
      keys: [await rowKey(deps, owners.get(item.sessionId)!, item.namespace, item.id)],
      args: item.epoch == null ? [item.sessionId, item.id, "", "1"] : [item.sessionId, item.id, item.epoch],
    })),
  );
  const replies = await deps.redis.runMany(calls);
  return { released: replies.reduce<number>((sum, r) => sum + Number(r), 0) };
}

/** POST /registry/tag: compare-and-set of the placement's owner tag. */
export async function tag(deps: AppDeps, principal: Principal, body: TagBody): Promise<{ tagged: boolean }> {
  const owners = await rowOwners(deps, principal, [body]);
  const key = await rowKey(deps, owners.get(body.sessionId)!, body.namespace, body.id);
  const reply = await deps.redis.run(tagRow, [key], [body.sessionId, body.id, body.epoch, body.tag]);
  return { tagged: Number(reply) === 1 };
}
