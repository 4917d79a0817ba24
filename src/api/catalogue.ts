import type { z } from "zod";
import { MAX_REGISTER_INSTANCES, MIN_SECRET_LENGTH } from "../registry/field-rules.ts";
import { deregisterBody, heartbeatBody, registerBody, releaseBody, tagBody } from "../registry/schemas.ts";
import * as answers from "./answers.ts";
import { OPERATOR_ROUTES } from "./operator-routes.ts";
import type { ErrorAnswer, RouteEntry } from "./route-entry.ts";

/**
 * Every route Pinboard serves under its base path, with what it takes and what it answers: the
 * body schemas the routes validate with, the 200 schemas of ./answers.ts, and the protocol's
 * error statuses and strings (docs/protocol.md). /openapi.json is built from this table, and a
 * test checks that it names every route the app registers.
 */

export type { Credential, ErrorAnswer, RouteEntry } from "./route-entry.ts";

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
