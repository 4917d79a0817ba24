import type { Principal } from "../auth/passport.ts";
import type { AppDeps } from "../deps/app-deps.ts";
import { unknownSession } from "../errors/pinboard-error.ts";
import { parseReleaseRow, releaseRowCall, tagRow } from "./lua/index.ts";
import { envOf, type WorkerRecord } from "./record.ts";
import type { ReleaseBody, TagBody } from "./schemas.ts";
import { checkRowNamespace, ownedSession, readSession } from "./sessions.ts";

/** What this module uses of the app's dependencies. */
export type ReleaseDeps = Pick<AppDeps, "config" | "redis" | "keys">;

/**
 * Resolves and checks every session a row operation names before anything is written, so a
 * body with one bad item changes nothing. Release and tag skip the expiry check.
 */
async function rowOwners(
  deps: ReleaseDeps,
  principal: Principal,
  accountTag: string,
  items: ReadonlyArray<{ sessionId: string; namespace: string }>,
): Promise<Map<string, WorkerRecord>> {
  const records = new Map<string, WorkerRecord>();
  for (const item of items) {
    let record = records.get(item.sessionId);
    if (!record) {
      record = await ownedSession(deps, principal, accountTag, item.sessionId, { live: false });
      records.set(item.sessionId, record);
    }
    checkRowNamespace(principal, record, item.namespace);
  }
  return records;
}

/** Where a session's row of (ns, id) lives: its bucket and its placements hash's env. */
function rowAt(
  deps: ReleaseDeps,
  record: WorkerRecord,
  ns: string,
  id: string,
): { bucket: number; env: string; ns: string } {
  return { bucket: deps.keys.bucketOf(id), env: envOf(record, ns), ns };
}

/**
 * POST /registry/release: compare-and-delete on sessionId and the quoted epoch. An item without
 * an epoch (absent or null) frees the session's row whatever its epoch; "" quotes an epoch-less
 * row and frees only that.
 */
export async function release(
  deps: ReleaseDeps,
  principal: Principal,
  accountTag: string,
  items: ReleaseBody,
): Promise<{ released: number }> {
  const owners = await rowOwners(deps, principal, accountTag, items);
  const calls = items.map((item) =>
    releaseRowCall(deps.keys, {
      ...rowAt(deps, owners.get(item.sessionId)!, item.namespace, item.id),
      sessionId: item.sessionId,
      id: item.id,
      epoch: item.epoch,
    }),
  );
  const replies = await deps.redis.runMany(calls);
  const released = replies.filter(parseReleaseRow).length;
  if (released === 0) await assertStillRecorded(deps, owners.keys());
  return { released };
}

/** POST /registry/tag: compare-and-set of the placement's owner tag. */
export async function tag(
  deps: ReleaseDeps,
  principal: Principal,
  accountTag: string,
  body: TagBody,
): Promise<{ tagged: boolean }> {
  const owners = await rowOwners(deps, principal, accountTag, [body]);
  const tagged = await tagRow(deps.redis, deps.keys, {
    ...rowAt(deps, owners.get(body.sessionId)!, body.namespace, body.id),
    sessionId: body.sessionId,
    id: body.id,
    epoch: body.epoch,
    tag: body.tag,
  });
  if (!tagged) await assertStillRecorded(deps, [body.sessionId]);
  return { tagged };
}

/**
 * After a compare-and-set that changed nothing: the session's record was read before the row was
 * compared (they live in different hash slots, so no one script can do both), and a re-register
 * reclaiming the row for a new session, a deregister or a voided heartbeat may have dropped it in
 * between. Answering "false" then would fit no serial order (before the drop the row still
 * matched, after it the session has no record), so read the record again: gone now, the answer
 * is 409 unknown session, as if the operation came after the drop (it wrote nothing). A record
 * never comes back once dropped, so one still there was there when the row was compared.
 */
async function assertStillRecorded(deps: ReleaseDeps, sessionIds: Iterable<string>): Promise<void> {
  for (const sessionId of sessionIds) if ((await readSession(deps, sessionId)) === null) throw unknownSession();
}
