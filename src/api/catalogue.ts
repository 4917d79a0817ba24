import type { z } from "zod";
import type { BodySchema } from "../http/json-body.ts";
import { drainBody, undrainBody, windDownBody } from "../operator/schemas.ts";
import { MAX_REGISTER_INSTANCES, MIN_SECRET_LENGTH } from "../registry/field-rules.ts";
import { deregisterBody, heartbeatBody, registerBody, releaseBody, tagBody } from "../registry/schemas.ts";
import * as answers from "./answers.ts";

/**
 * Every route Pinboard serves under its base path, with what it takes and what it answers: the
 * body schemas the routes validate with, the 200 schemas of ./answers.ts, and the protocol's
 * error statuses and strings (docs/protocol.md). /openapi.json is built from this table, and a
 * test checks that it names every route the app registers.
 */

export type Credential = "none" | "pinboard:worker" | "pinboard:operator" | "data plane";

export interface ErrorAnswer {
  status: number;
  /** The exact `error` strings of this status (a `…` stands for the named value). */
  errors: string[];
  when: string;
}

export interface RouteEntry {
  method: "get" | "post";
  /** Under the base path. */
  path: string;
  summary: string;
  tag: "health" | "worker" | "operator" | "description" | "console";
  credential: Credential;
  body?: BodySchema<unknown>;
  query?: Record<string, { description: string }>;
  /** The 200 body; absent for an empty one. */
  ok?: z.ZodType;
  okDescription: string;
  errors: ErrorAnswer[];
  /** False for the routes that answer while this node is not serving. */
  servingOnly: boolean;
}

const unknownSession: ErrorAnswer = {
  status: 409,
  errors: ["unknown session"],
  when: "the session has no live record (the answer carries `reregister: true`)",
};

const WORKER_ROUTES: RouteEntry[] = [
  {
    method: "post",
    path: "/registry/register",
    summary:
      "Register a worker: probe its advertise URL, mirror it into every namespace list, reclaim the instances it holds",
    tag: "worker",
    credential: "pinboard:worker",
    body: registerBody,
    ok: answers.registerOk,
    okDescription: "the new session; `duplicates` lists held ids the worker must evict",
    errors: [
      {
        status: 400,
        errors: [
          "registration probe failed",
          `secret too short: at least ${MIN_SECRET_LENGTH} characters`,
          "invalid namespace: …",
          "reserved namespace: …",
          "invalid advertiseUrl: …",
          "hostname requires hostname-aware mode",
          "env requires hostname-aware mode",
          "envs requires hostname-aware mode",
          "takeover requires hostname-aware mode",
          "epoch requires hostname-aware mode",
          "hostname is required in hostname-aware mode",
          "invalid hostname: …",
          "invalid env: …",
          "namespace not registered: …",
          `too many instances: at most ${MAX_REGISTER_INSTANCES} ids`,
          "invalid id: …",
        ],
        when: "the challenge probe failed, or a field rule refused the body",
      },
      {
        status: 403,
        errors: [
          "namespace not allowed: …",
          "backend host not allowed: …",
          "advertiseUrl port not allowed: …",
          "hostname not allowed: …",
          "env not allowed: …",
        ],
        when: "the body falls outside the credential's pinboard claims",
      },
      {
        status: 409,
        errors: [
          "client belongs to another account",
          "hostname {h}{ns} is bound to env {e} at epoch {n}, not {e2} — register with a higher epoch to displace",
          "env {e} agreed takeover {t} at epoch {n}, not {t2} — register with a higher epoch to displace",
        ],
        when: "the client or a hostname binding belongs to someone else",
      },
    ],
    servingOnly: true,
  },
  {
    method: "post",
    path: "/registry/heartbeat",
    summary: "Renew a worker's lease, probe its advertise URL again, and read its control messages",
    tag: "worker",
    credential: "pinboard:worker",
    body: heartbeatBody,
    ok: answers.heartbeatOk,
    okDescription: "the renewed lease; `messages` are delivered until acknowledged",
    errors: [
      { ...unknownSession },
      {
        status: 409,
        errors: [
          "registration voided: challenge value mismatch on the advertise URL",
          "registration superseded: {hostname}{ns} now bound to env {env} at epoch {n}",
        ],
        when: "the worker's records were dropped; register again",
      },
    ],
    servingOnly: true,
  },
  {
    method: "post",
    path: "/registry/release",
    summary: "Compare-and-delete placement rows the session owns",
    tag: "worker",
    credential: "pinboard:worker",
    body: releaseBody,
    ok: answers.releaseOk,
    okDescription: "how many rows were freed",
    errors: [
      unknownSession,
      {
        status: 400,
        errors: ["invalid namespace", "namespace not registered: …"],
        when: "a namespace is malformed or not the session's",
      },
    ],
    servingOnly: true,
  },
  {
    method: "post",
    path: "/registry/tag",
    summary: "Compare-and-set a placement's owner tag",
    tag: "worker",
    credential: "pinboard:worker",
    body: tagBody,
    ok: answers.tagOk,
    okDescription: "whether the row matched and was tagged",
    errors: [
      unknownSession,
      {
        status: 400,
        errors: ["invalid namespace", "namespace not registered: …"],
        when: "a namespace is malformed or not the session's",
      },
    ],
    servingOnly: true,
  },
  {
    method: "post",
    path: "/registry/deregister",
    summary: "Remove the session from every namespace list and drop its record",
    tag: "worker",
    credential: "pinboard:worker",
    body: deregisterBody,
    ok: answers.deregisterOk,
    okDescription: "an empty object",
    errors: [unknownSession],
    servingOnly: true,
  },
];

const outOfScope: ErrorAnswer = {
  status: 403,
  errors: ["forbidden"],
  when: "the target is outside the credential's claims",
};

const OPERATOR_ROUTES: RouteEntry[] = [
  {
    method: "get",
    path: "/registry/health",
    summary: "This node's resolution counts, connections, cold-start window and uptime",
    tag: "operator",
    credential: "pinboard:operator",
    ok: answers.healthOk,
    okDescription: "this node's counters; answers while booting or draining",
    errors: [],
    servingOnly: false,
  },
  {
    method: "get",
    path: "/registry/history",
    summary:
      "This node's last 15 minutes (an extension): forwards, refusals by kind and forward latency p50/p99 per 10 s slot",
    tag: "operator",
    credential: "pinboard:operator",
    ok: answers.historyOk,
    okDescription: "90 slots, oldest first, the current one last; answers while booting or draining",
    errors: [],
    servingOnly: false,
  },
  {
    method: "get",
    path: "/registry/workers",
    summary: "Live workers within the credential's claims, without secrets",
    tag: "operator",
    credential: "pinboard:operator",
    ok: answers.workersOk,
    okDescription: "live records, sorted by hostname then session",
    errors: [],
    servingOnly: true,
  },
  {
    method: "get",
    path: "/registry/overview",
    summary: "Workers, hostname bindings and live placements, filtered",
    tag: "operator",
    credential: "pinboard:operator",
    query: {
      ns: { description: "exact namespace, e.g. /threads" },
      prefix: { description: "id prefix" },
      tag: { description: "exact owner tag (untagged rows are left out)" },
      limit: {
        description:
          "paging (an extension of the protocol): at most this many entries, 1–1000; the answer's `cursor` goes on",
      },
      cursor: {
        description:
          "the `cursor` of the previous answer (one that stopped at `limit` or at the walk's per-request budget), " +
          "with the same filters",
      },
    },
    ok: answers.overviewOk,
    okDescription: "the fleet as this credential may see it",
    errors: [
      {
        status: 400,
        errors: ["invalid namespace", "empty tag", "invalid limit", "invalid cursor"],
        when: "a malformed `ns`, a blank `tag`, a `limit` outside 1–1000 or a `cursor` this route did not give",
      },
    ],
    servingOnly: true,
  },
  {
    method: "get",
    path: "/registry/stats",
    summary: "Each visible worker's /_pinned/stats (3 s timeout, 8 at a time)",
    tag: "operator",
    credential: "pinboard:operator",
    ok: answers.statsOk,
    okDescription: "per worker, its stats or `unreachable`",
    errors: [],
    servingOnly: true,
  },
  {
    method: "get",
    path: "/registry/placement",
    summary:
      "One placement's story (an extension): its row in each env, owner, epoch, wind-down fence, tag, alarm and the owner's view of the instance",
    tag: "operator",
    credential: "pinboard:operator",
    query: {
      ns: { description: "the namespace, e.g. /threads (required)" },
      id: { description: "the instance id (required)" },
    },
    ok: answers.placementOk,
    okDescription: "the id's rows the credential may see, one per env",
    errors: [
      {
        status: 400,
        errors: ["ns is required", "invalid namespace", "id is required", "invalid id"],
        when: "`ns` or `id` is missing or malformed",
      },
      {
        status: 404,
        errors: ["placement not found"],
        when: "the id has no row the credential may see (a row outside its claims answers the same)",
      },
    ],
    servingOnly: true,
  },
  {
    method: "get",
    path: "/registry/spread",
    summary:
      "Placements per visible live worker (an extension), counted inside Redis; kept 10 s (or 20× its cost) per node and claim scope",
    tag: "operator",
    credential: "pinboard:operator",
    ok: answers.spreadOk,
    okDescription: "`complete: false` when the census stopped at its budget (the counts are then lower bounds)",
    errors: [],
    servingOnly: true,
  },
  {
    method: "get",
    path: "/registry/audit",
    summary:
      "The audit trail (an extension): operator actions and fleet events, newest first, within the credential's claims",
    tag: "operator",
    credential: "pinboard:operator",
    query: {
      limit: { description: "at most this many entries, 1–500 (default 100)" },
      before: { description: "the `cursor` of the previous page (an entry id): only older entries" },
      kind: { description: "`action` or `event`" },
      type: { description: "one entry type, e.g. `drain` or `worker.died`" },
    },
    ok: answers.auditOk,
    okDescription: "the entries this credential may see; `cursor` goes on to older ones",
    errors: [
      {
        status: 400,
        errors: ["invalid limit", "invalid before", "invalid kind", "invalid type"],
        when: "a `limit` outside 1–500, a `before` that is not an entry id, or an unknown `kind` or `type`",
      },
    ],
    servingOnly: true,
  },
  {
    method: "post",
    path: "/registry/wind_down",
    summary: "Set a placement's (or a namespace's) wind-down deadline and tell the owner",
    tag: "operator",
    credential: "pinboard:operator",
    body: windDownBody,
    ok: answers.windDownOk,
    okDescription: "whether the message was queued, or how many placements a namespace wind-down covered",
    errors: [
      {
        status: 400,
        errors: ["env is required in hostname-aware mode", "env requires hostname-aware mode", "invalid namespace"],
        when: "the env does not fit the mode, or the namespace is malformed",
      },
      {
        status: 403,
        errors: ["namespace not allowed: …", "env not allowed: …", "forbidden"],
        when: "the placement is outside the credential's claims",
      },
    ],
    servingOnly: true,
  },
  {
    method: "post",
    path: "/registry/drain",
    summary: "Cordon a client (deadline null) or force its release by a deadline",
    tag: "operator",
    credential: "pinboard:operator",
    body: drainBody,
    ok: answers.drainOk,
    okDescription: "the drain is written",
    errors: [outOfScope],
    servingOnly: true,
  },
  {
    method: "post",
    path: "/registry/undrain",
    summary: "Revoke a client's drain",
    tag: "operator",
    credential: "pinboard:operator",
    body: undrainBody,
    ok: answers.undrainOk,
    okDescription: "whether a drain was revoked",
    errors: [outOfScope],
    servingOnly: true,
  },
];

const HEALTH_ROUTES: RouteEntry[] = [
  {
    method: "get",
    path: "/healthz",
    summary: "Liveness",
    tag: "health",
    credential: "none",
    ok: answers.healthzOk,
    okDescription: 'always `{"ok":true}`',
    errors: [],
    servingOnly: false,
  },
  {
    method: "get",
    path: "/openapi.json",
    summary: "This description: OpenAPI 3.1, built from the routes' own schemas",
    tag: "description",
    credential: "none",
    ok: answers.openApiOk,
    okDescription: "the document",
    errors: [],
    servingOnly: false,
  },
  {
    method: "get",
    path: "/console",
    summary: "The operator console: one page that calls the operator routes with a pasted credential",
    tag: "console",
    credential: "none",
    okDescription: "the page (text/html)",
    errors: [],
    servingOnly: false,
  },
  {
    method: "get",
    path: "/readyz",
    summary: "Readiness: not draining, holding the fleet license, passing membership (503 otherwise, empty body)",
    tag: "health",
    credential: "none",
    okDescription: "ready (empty body)",
    errors: [],
    servingOnly: false,
  },
];

export const ROUTES: readonly RouteEntry[] = [...HEALTH_ROUTES, ...WORKER_ROUTES, ...OPERATOR_ROUTES];

/** The 200 body schema of each JSON route, by "METHOD /path" ("POST /registry/tag"). */
export const ROUTE_OK: Readonly<Record<string, z.ZodType>> = Object.fromEntries(
  ROUTES.filter((r) => r.ok !== undefined).map((r) => [`${r.method.toUpperCase()} ${r.path}`, r.ok!]),
);

/** What every credentialed route may answer besides its own errors. */
export function sharedErrors(route: RouteEntry): ErrorAnswer[] {
  if (route.credential === "none") return [];
  const out: ErrorAnswer[] = [
    { status: 401, errors: ["unauthorized"], when: "no valid Passport credential" },
    {
      status: 403,
      errors: ["forbidden"],
      when: `a credential without the ${route.credential} scope, or with a malformed pinboard claim`,
    },
  ];
  if (route.body) {
    out.push({ status: 413, errors: ["body too large"], when: "a JSON body over the route's limit" });
    out.push({
      status: 400,
      errors: ["invalid json", route.body.expected],
      when: "a body that does not parse, or fails the route's schema",
    });
  }
  if (route.servingOnly)
    out.push({ status: 503, errors: ["not the serving fleet"], when: "this node is not serving (Retry-After: 1)" });
  return out;
}
