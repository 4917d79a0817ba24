import { constantTimeEqual } from "../contract/constant-time.ts";
import {
  FROM_HEADER,
  SESSION_HEADER,
  SESSION_SECRET_HEADER,
  SUBREQUEST_DEPTH_HEADER,
} from "../contract/header-names.ts";
import { isId, isNamespace } from "../contract/names.ts";
import type { AppDeps } from "../deps/app-deps.ts";
import { forbidden, PinboardError } from "../errors/pinboard-error.ts";
import { envOf, type WorkerRecord } from "../registry/record.ts";
import { readSession } from "../registry/sessions.ts";
import type { HeaderSource } from "./inbound.ts";

/** What this module uses of the app's dependencies. */
export type CallerDeps = Pick<AppDeps, "config" | "redis" | "keys" | "now" | "secrets">;

/** An instance calling another through Pinboard, verified against its session and placement. */
export interface Caller {
  from: string;
  record: WorkerRecord;
  /** The attested depth of this subrequest (1 for a first hop). */
  depth: number;
}

export const MAX_SUBREQUEST_DEPTH = 50;

// HeaderSource names are lowercase.
const FROM = FROM_HEADER.toLowerCase();
const SESSION = SESSION_HEADER.toLowerCase();
const SESSION_SECRET = SESSION_SECRET_HEADER.toLowerCase();
const SUBREQUEST_DEPTH = SUBREQUEST_DEPTH_HEADER.toLowerCase();

/**
 * Caller attestation: Pinboard-From: {ns}/{id}, Pinboard-Session, Pinboard-Session-Secret and
 * an optional Pinboard-Subrequest-Depth (≤ 9 digits; absent means a first hop, depth 1). The
 * session's secret must match and the caller's placement row must belong to that session.
 * Null, without an await, when the request carries no caller headers at all (most carry none).
 */
export function verifyCaller(deps: CallerDeps, headers: HeaderSource): Promise<Caller> | null {
  const from = headers.get(FROM);
  const session = headers.get(SESSION);
  const secret = headers.get(SESSION_SECRET);
  const rawDepth = headers.get(SUBREQUEST_DEPTH);
  if (from === null && session === null && secret === null && rawDepth === null) return null;
  return verifiedCaller(deps, from, session, secret, rawDepth);
}

async function verifiedCaller(
  deps: CallerDeps,
  from: string | null,
  session: string | null,
  secret: string | null,
  rawDepth: string | null,
): Promise<Caller> {
  if (!session || !secret) throw forbidden("caller attestation requires session credentials");

  let depth = 1;
  if (rawDepth !== null) {
    if (!/^\d{1,9}$/.test(rawDepth)) throw forbidden("malformed subrequest depth");
    depth = Number(rawDepth);
    if (depth > MAX_SUBREQUEST_DEPTH) throw PinboardError.of(508, "subrequest depth exceeded");
  }

  const record = await readSession(deps, session);
  if (!record || record.expiry <= deps.now()) throw forbidden("unknown session");
  const registered = await deps.secrets.open(record.sessionId, record.secret);
  if (!(await constantTimeEqual(secret, registered))) throw forbidden("invalid session secret");

  const slash = from?.lastIndexOf("/") ?? -1;
  const ns = from?.slice(0, slash) ?? "";
  const id = from?.slice(slash + 1) ?? "";
  if (!from || slash <= 0 || !isNamespace(ns) || !isId(id)) throw forbidden("malformed caller claim");

  const { keys } = deps;
  const row = record.namespaces.includes(ns)
    ? await deps.redis.hget(keys.placements(await keys.bucketOf(id), envOf(record, ns), ns), id)
    : null;
  if (row === null || row.slice(0, row.indexOf("\n")) !== record.sessionId)
    throw forbidden("caller placement mismatch");
  return { from, record, depth };
}

/**
 * A verified caller may reach any namespace inside its own registration: the same hostname and
 * the env its registration names for the target's namespace (envs[ns], else its env), as one
 * Durable Object class may call another. Single mode has one hostname and one env.
 */
export function assertInCallerScope(
  caller: Caller,
  target: { ns: string; hostname: string; env: string },
  hostnameAware: boolean,
): void {
  if (!hostnameAware) return;
  const { record } = caller;
  if (record.hostname !== target.hostname || envOf(record, target.ns) !== target.env)
    throw forbidden("target outside caller scope");
}
