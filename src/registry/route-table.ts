import type { ErrorAnswer, RouteTable } from "../http/route-declaration.ts";
import { MAX_REGISTER_INSTANCES, MIN_SECRET_LENGTH } from "./field-rules.ts";
import { deregisterReply, heartbeatReply, registerReply, releaseReply, tagReply } from "./replies.ts";
import { deregisterBody, heartbeatBody, registerBody, releaseBody, tagBody } from "./schemas.ts";

/**
 * The worker routes (pinboard:worker), declared once: ./routes.ts gives each its handler, and
 * /openapi.json describes them from here (docs/protocol.md is their prose).
 */

const unknownSession: ErrorAnswer = {
  status: 409,
  errors: ["unknown session"],
  when: "the session has no live record (the answer carries `reregister: true`)",
};

const notTheSessionsNamespace: ErrorAnswer = {
  status: 400,
  errors: ["invalid namespace", "namespace not registered: …"],
  when: "a namespace is malformed or not the session's",
};

export const WORKER_ROUTES = {
  register: {
    method: "post",
    path: "/registry/register",
    summary:
      "Register a worker: probe its advertise URL, mirror it into every namespace list, reclaim the instances it holds",
    tag: "worker",
    credential: "pinboard:worker",
    body: registerBody,
    reply: registerReply,
    replyDescription: "the new session; `duplicates` lists held ids the worker must evict",
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
  heartbeat: {
    method: "post",
    path: "/registry/heartbeat",
    summary: "Renew a worker's lease, probe its advertise URL again, and read its control messages",
    tag: "worker",
    credential: "pinboard:worker",
    body: heartbeatBody,
    reply: heartbeatReply,
    replyDescription: "the renewed lease; `messages` are delivered until acknowledged",
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
  release: {
    method: "post",
    path: "/registry/release",
    summary: "Compare-and-delete placement rows the session owns",
    tag: "worker",
    credential: "pinboard:worker",
    body: releaseBody,
    reply: releaseReply,
    replyDescription: "how many rows were freed",
    errors: [unknownSession, notTheSessionsNamespace],
    servingOnly: true,
  },
  tag: {
    method: "post",
    path: "/registry/tag",
    summary: "Compare-and-set a placement's owner tag",
    tag: "worker",
    credential: "pinboard:worker",
    body: tagBody,
    reply: tagReply,
    replyDescription: "whether the row matched and was tagged",
    errors: [unknownSession, notTheSessionsNamespace],
    servingOnly: true,
  },
  deregister: {
    method: "post",
    path: "/registry/deregister",
    summary: "Remove the session from every namespace list and drop its record",
    tag: "worker",
    credential: "pinboard:worker",
    body: deregisterBody,
    reply: deregisterReply,
    replyDescription: "an empty object",
    errors: [unknownSession],
    servingOnly: true,
  },
} satisfies RouteTable;
