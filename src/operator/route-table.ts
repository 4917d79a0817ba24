import type { ErrorAnswer, RouteTable } from "../http/route-declaration.ts";
import { auditReply } from "./audit-reply.ts";
import {
  drainReply,
  healthReply,
  historyReply,
  overviewReply,
  placementReply,
  spreadReply,
  statsReply,
  undrainReply,
  windDownReply,
  workersReply,
} from "./replies.ts";
import { drainBody, undrainBody, windDownBody } from "./schemas.ts";

const outOfScope: ErrorAnswer = {
  status: 403,
  errors: ["forbidden"],
  when: "the target is outside the credential's claims",
};

/** What every operator route shares: its OpenAPI tag and the credential it takes. */
const operatorTagged = { tag: "operator", credential: "pinboard:operator" } as const;

/**
 * The operator routes (pinboard:operator), declared once: reads, the console's extensions, and the
 * actions. ./routes.ts gives each its handler; /openapi.json and the CLI read them from here.
 */
export const OPERATOR_ROUTES = {
  health: {
    method: "get",
    path: "/registry/health",
    summary: "This node's resolution counts, connections, cold-start window and uptime",
    ...operatorTagged,
    reply: healthReply,
    replyDescription: "this node's counters; answers while booting or draining",
    errors: [],
    servingOnly: false,
  },
  history: {
    method: "get",
    path: "/registry/history",
    summary:
      "This node's last 15 minutes (an extension): forwards, refusals by kind and forward latency p50/p99 per 10 s slot",
    ...operatorTagged,
    reply: historyReply,
    replyDescription: "90 slots, oldest first, the current one last; answers while booting or draining",
    errors: [
      {
        status: 403,
        errors: ["forbidden"],
        when: "the credential's pinboard claim is narrower than \"*\" namespaces with hostnames and envs open (every tenant's traffic, as /metrics)",
      },
    ],
    servingOnly: false,
  },
  workers: {
    method: "get",
    path: "/registry/workers",
    summary: "Live workers within the credential's claims, without secrets",
    ...operatorTagged,
    reply: workersReply,
    replyDescription: "live records, sorted by hostname then session",
    errors: [],
    servingOnly: true,
  },
  overview: {
    method: "get",
    path: "/registry/overview",
    summary: "Workers, hostname bindings and live placements, filtered",
    ...operatorTagged,
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
    reply: overviewReply,
    replyDescription: "the fleet as this credential may see it",
    errors: [
      {
        status: 400,
        errors: ["invalid namespace", "empty tag", "invalid limit", "invalid cursor"],
        when: "a malformed `ns`, a blank `tag`, a `limit` outside 1–1000 or a `cursor` this route did not give",
      },
    ],
    servingOnly: true,
  },
  stats: {
    method: "get",
    path: "/registry/stats",
    summary: "Each visible worker's /_pinned/stats (3 s timeout, 8 at a time)",
    ...operatorTagged,
    reply: statsReply,
    replyDescription: "per worker, its stats or `unreachable`",
    errors: [],
    servingOnly: true,
  },
  placement: {
    method: "get",
    path: "/registry/placement",
    summary:
      "One placement's story (an extension): its row in each env, owner, epoch, wind-down fence, tag, alarm and the owner's view of the instance",
    ...operatorTagged,
    query: {
      ns: { description: "the namespace, e.g. /threads (required)" },
      id: { description: "the instance id (required)" },
    },
    reply: placementReply,
    replyDescription: "the id's rows the credential may see, one per env",
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
  spread: {
    method: "get",
    path: "/registry/spread",
    summary:
      "Placements per visible live worker (an extension), counted inside Redis; kept 10 s (or 20× its cost) per node and claim scope",
    ...operatorTagged,
    reply: spreadReply,
    replyDescription: "`complete: false` when the census stopped at its budget (the counts are then lower bounds)",
    errors: [],
    servingOnly: true,
  },
  audit: {
    method: "get",
    path: "/registry/audit",
    summary:
      "The audit trail (an extension): operator actions and fleet events, newest first, within the credential's claims",
    ...operatorTagged,
    query: {
      limit: { description: "at most this many entries, 1–500 (default 100)" },
      before: { description: "the `cursor` of the previous answer (an entry id): only older entries" },
      kind: { description: "`action` or `event`" },
      type: { description: "one entry type, e.g. `drain` or `worker.died`" },
    },
    reply: auditReply,
    replyDescription:
      "the entries this credential may see among at most 500 of the trail (whatever it may see); `cursor` (the last entry looked at) goes on to older ones, and an answer with no entries but a cursor is normal for a narrow credential",
    errors: [
      {
        status: 400,
        errors: ["invalid limit", "invalid before", "invalid kind", "invalid type"],
        when: "a `limit` outside 1–500, a `before` that is not an entry id, or an unknown `kind` or `type`",
      },
      {
        status: 503,
        errors: ["audit reads busy, retry"],
        when: "2 audit reads run on this node and 64 wait (Retry-After: 1)",
      },
    ],
    servingOnly: true,
  },
  windDown: {
    method: "post",
    path: "/registry/wind_down",
    summary: "Set a placement's (or a namespace's) wind-down deadline and tell the owner",
    ...operatorTagged,
    body: windDownBody,
    reply: windDownReply,
    replyDescription: "whether the message was queued, or how many placements a namespace wind-down covered",
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
  drain: {
    method: "post",
    path: "/registry/drain",
    summary: "Cordon a client (deadline null) or force its release by a deadline",
    ...operatorTagged,
    body: drainBody,
    reply: drainReply,
    replyDescription: "the drain is written",
    errors: [outOfScope],
    servingOnly: true,
  },
  undrain: {
    method: "post",
    path: "/registry/undrain",
    summary: "Revoke a client's drain",
    ...operatorTagged,
    body: undrainBody,
    reply: undrainReply,
    replyDescription: "whether a drain was revoked",
    errors: [outOfScope],
    servingOnly: true,
  },
} satisfies RouteTable;
