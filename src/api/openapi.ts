import { z } from "zod";
import type { ErrorAnswer, RouteDeclaration } from "../http/route-declaration.ts";
import { REFUSAL_ERRORS } from "../placement/refusal.ts";
import { ROUTES, sharedErrors } from "./catalogue.ts";

/**
 * GET {basePath}/openapi.json: an OpenAPI 3.1 description of every route, built from the route
 * catalogue (./catalogue.ts): request bodies from the zod schemas the routes validate with, 200
 * bodies from the declared reply schemas, and the protocol's error statuses with their exact strings as
 * examples. JSON Schema comes from zod's own converter, so nothing is written twice.
 */

type Json = Record<string, unknown>;

const ERROR_BODY = {
  type: "object",
  required: ["error"],
  properties: {
    error: { type: "string" },
    reregister: { const: true, description: "register again: the session is gone" },
    superseded: { const: true, description: "a higher binding epoch displaced the worker" },
  },
};

/** JSON Schema (2020-12, the dialect of OpenAPI 3.1) of a zod schema, as a request or an answer. */
function jsonSchema(schema: z.ZodType, io: "input" | "output"): Json {
  const { $schema: _dialect, ...rest } = z.toJSONSchema(schema, { io, unrepresentable: "any" }) as Json;
  return rest;
}

/** Errors of one status merged, each exact string an example. */
function errorResponses(errors: ErrorAnswer[]): Record<string, Json> {
  const byStatus = new Map<number, ErrorAnswer[]>();
  for (const e of errors) byStatus.set(e.status, [...(byStatus.get(e.status) ?? []), e]);
  const out: Record<string, Json> = {};
  for (const [status, list] of [...byStatus].sort(([a], [b]) => a - b)) {
    const strings = [...new Set(list.flatMap((e) => e.errors))];
    out[String(status)] = {
      description: list.map((e) => e.when).join("; "),
      content: {
        "application/json": {
          schema: { $ref: "#/components/schemas/Error" },
          examples: Object.fromEntries(strings.map((error, i) => [`e${i + 1}`, { summary: error, value: { error } }])),
        },
      },
    };
  }
  return out;
}

function operation(route: RouteDeclaration): Json {
  const pathInCamelCase = route.path.replace(/[^A-Za-z0-9]+(.)?/g, (_, c: string | undefined) =>
    (c ?? "").toUpperCase(),
  );
  const op: Json = {
    operationId: `${route.method}${pathInCamelCase}`,
    summary: route.summary,
    tags: [route.tag],
    security: route.credential === "none" ? [] : [{ passport: [] }],
    responses: {
      "200": route.reply
        ? {
            description: route.replyDescription,
            content: { "application/json": { schema: jsonSchema(route.reply, "output") } },
          }
        : { description: route.replyDescription },
      ...(route.path === "/readyz" ? { "503": { description: "not ready (empty body)" } } : {}),
      ...errorResponses([...sharedErrors(route), ...route.errors]),
    },
  };
  if (route.credential !== "none") op["x-pinboard-scope"] = route.credential;
  if (route.body)
    op.requestBody = {
      required: true,
      content: { "application/json": { schema: jsonSchema(route.body.schema, "input") } },
    };
  if (route.query) {
    op.parameters = Object.entries(route.query).map(([name, q]) => ({
      name,
      in: "query",
      required: false,
      description: q.description,
      schema: { type: "string" },
    }));
  }
  return op;
}

/** Any method on /{namespace}/{id}{rest}: what Pinboard itself may answer instead of the worker. */
function dataPlaneOperation(method: string): Json {
  const refusals = Object.values(REFUSAL_ERRORS);
  return {
    operationId: `dataPlane${method[0]!.toUpperCase()}${method.slice(1)}`,
    summary: "Forward to the one worker that owns (env, namespace, id); any path below the id goes along",
    tags: ["data plane"],
    security: [],
    description:
      "Placed by an atomic resolve; the forward carries Pinboard-Attestation and Pinboard-Epoch. " +
      "A data-plane passport (bearer) is required only where PINBOARD_DATA_PLANE_RULES name the namespace; " +
      "an instance calling another sends Pinboard-From, Pinboard-Session, Pinboard-Session-Secret and " +
      "Pinboard-Subrequest-Depth.",
    responses: {
      default: {
        description:
          "the worker's answer, relayed (Pinboard-* and hop-by-hop headers removed, X-Accel-Buffering: no added)",
      },
      "400": {
        description: "an empty or malformed id (text/plain), or a missing Host in hostname-aware mode",
        content: { "text/plain": { schema: { type: "string" } } },
      },
      "502": {
        description: "bad gateway: the worker was unreachable (text/plain), or empty when the client left first",
        content: { "text/plain": { schema: { type: "string" }, example: "bad gateway" } },
      },
      "504": {
        description: "upstream timeout: no answer within the forward timeout (text/plain)",
        content: { "text/plain": { schema: { type: "string" }, example: "upstream timeout" } },
      },
      ...errorResponses([
        {
          status: 401,
          errors: ["authentication required", "invalid credential"],
          when: "the namespace needs a data-plane passport",
        },
        {
          status: 403,
          errors: [
            "namespace not allowed",
            "insufficient scope",
            "caller attestation requires session credentials",
            "unknown session",
            "invalid session secret",
            "malformed caller claim",
            "caller placement mismatch",
            "malformed subrequest depth",
            "target outside caller scope",
          ],
          when: "the passport or the caller's attestation does not allow the request",
        },
        { status: 404, errors: ["unknown namespace"], when: "no worker serves the namespace" },
        { status: 503, errors: refusals, when: "a refusal, with Retry-After in seconds" },
        { status: 508, errors: ["subrequest depth exceeded"], when: "a chain of instance calls deeper than 50" },
      ]),
    },
  };
}

const DATA_PLANE_METHODS = ["get", "put", "post", "delete", "patch", "head", "options"] as const;

export function openApiDocument(options: { basePath: string; version: string }): Json {
  const paths: Record<string, Json> = {};
  for (const route of ROUTES) paths[route.path] = { ...paths[route.path], [route.method]: operation(route) };
  paths["/{namespace}/{id}"] = {
    parameters: [
      {
        name: "namespace",
        in: "path",
        required: true,
        description: "a registered namespace without its slash: 1–128 of A–Z a–z 0–9 . _ ~ -",
        schema: { type: "string", pattern: "^[A-Za-z0-9._~-]{1,128}$" },
      },
      {
        name: "id",
        in: "path",
        required: true,
        description: "the instance id: 1–256 of A–Z a–z 0–9 . _ ~ -",
        schema: { type: "string", pattern: "^[A-Za-z0-9._~-]{1,256}$" },
      },
    ],
    ...Object.fromEntries(DATA_PLANE_METHODS.map((m) => [m, dataPlaneOperation(m)])),
  };
  return {
    openapi: "3.1.0",
    info: {
      title: "Pinboard",
      version: options.version,
      description:
        "Control plane for stateful workers: registry, atomic placement and attested forwarding. " +
        "docs/protocol.md is the prose of this description.",
    },
    servers: [{ url: options.basePath || "/" }],
    tags: [
      { name: "health", description: "liveness and readiness" },
      { name: "description", description: "this document" },
      { name: "console", description: "the operator console in a browser" },
      { name: "worker", description: "what a worker calls (scope pinboard:worker)" },
      { name: "operator", description: "what an operator calls (scope pinboard:operator)" },
      { name: "data plane", description: "client requests, forwarded to the owning worker" },
    ],
    paths,
    components: {
      schemas: { Error: ERROR_BODY },
      securitySchemes: {
        passport: {
          type: "http",
          scheme: "bearer",
          bearerFormat: "JWT",
          description: "A Passport credential (HS256 or a JWKS key) with the route's scope in `scopes`",
        },
      },
    },
  };
}
