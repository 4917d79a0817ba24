import { readFileSync } from "node:fs";
import { fileURLToPath } from "node:url";
import { Validator } from "@seriousme/openapi-schema-validator";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ROUTES } from "../../src/api/catalogue.ts";
import { PINBOARD_VERSION } from "../../src/contract/version.ts";
import { REFUSAL_ERRORS } from "../../src/placement/refusal.ts";
import { startTestPinboard, type TestPinboard } from "../support/pinboard-app.ts";
import { type PinboardProcess, startPinboardProcess } from "../support/pinboard-process.ts";
import { startTestRedis, type TestRedis } from "../support/redis.ts";

/**
 * GET {basePath}/openapi.json: a valid OpenAPI 3.1 document, served without a credential by the
 * in-process app and by the Node entry (whose own front must not take it for a data-plane path),
 * naming every route the app registers, with the protocol's statuses and exact error strings.
 */

const ROOT = fileURLToPath(new URL("../../", import.meta.url));
/** The parts of a JSON Schema the tests read. */
interface Schema {
  required?: string[];
  properties?: Record<string, Schema>;
  anyOf?: Schema[];
}
interface MediaType {
  schema: Schema;
  examples?: Record<string, { value: { error: string } }>;
}
interface Operation {
  security?: unknown[];
  "x-pinboard-scope"?: string;
  requestBody?: { content: Record<string, MediaType> };
  responses: Record<string, { description?: string; content?: Record<string, MediaType> }>;
}
type Doc = {
  openapi: string;
  info: { version: string };
  servers: Array<{ url: string }>;
  paths: Record<string, Record<string, Operation>>;
};

let t: TestRedis, pb: TestPinboard, node: PinboardProcess, doc: Doc;

beforeAll(async () => {
  t = await startTestRedis();
  pb = await startTestPinboard(t, { PINBOARD_BASE_PATH: "/pb" });
  node = await startPinboardProcess({ redis: t, env: { PINBOARD_PREFIX: "node:" } });
  const res = await pb.call("GET", "/pb/openapi.json");
  expect(res.status).toBe(200);
  expect(res.headers.get("content-type")).toBe("application/json");
  doc = (await res.json()) as Doc;
});
afterAll(async () => {
  await node?.stop();
  await pb?.close();
  await t?.stop();
});

/** One operation of the document. */
function operation(path: string, method: string): Operation {
  const op = doc.paths[path]?.[method];
  if (op === undefined) throw new Error(`the document has no ${method} ${path}`);
  return op;
}

/** The JSON schema of one operation's request body, or of one of its answers. */
function schemaOf(path: string, method: string, status?: number): Schema {
  const op = operation(path, method);
  const content = status === undefined ? op.requestBody?.content : op.responses[String(status)]?.content;
  const schema = content?.["application/json"]?.schema;
  if (schema === undefined) throw new Error(`${method} ${path} has no JSON schema for ${status ?? "its body"}`);
  return schema;
}

/** Example `error` strings of one answer of one operation. */
function examples(path: string, method: string, status: number): string[] {
  const answer = doc.paths[path]?.[method]?.responses[String(status)];
  const list = answer?.content?.["application/json"]?.examples ?? {};
  return Object.values(list).map((e) => e.value.error);
}

describe("/openapi.json", () => {
  it("is a valid OpenAPI 3.1 document of this version, served under the base path", async () => {
    const validator = new Validator();
    const result = await validator.validate(doc as never);
    expect(result.errors ?? []).toEqual([]);
    expect(result.valid).toBe(true);
    expect(validator.version).toBe("3.1");
    expect(doc.info.version).toBe(PINBOARD_VERSION);
    expect(PINBOARD_VERSION).toBe(JSON.parse(readFileSync(`${ROOT}package.json`, "utf8")).version);
    expect(doc.servers).toEqual([{ url: "/pb" }]);
  });

  it("names every route the app registers, with its method", () => {
    const registered = pb.app.routes
      .filter((r) => r.method !== "ALL" && !r.path.includes("*"))
      .map((r) => `${r.method.toLowerCase()} ${r.path.replace(/^\/pb/, "")}`);
    expect(registered.length).toBeGreaterThanOrEqual(ROUTES.length);
    const described = Object.entries(doc.paths).flatMap(([path, ops]) =>
      Object.keys(ops)
        .filter((k) => k !== "parameters")
        .map((m) => `${m} ${path}`),
    );
    expect(new Set(described)).toEqual(
      new Set([
        ...registered,
        ...["get", "put", "post", "delete", "patch", "head", "options"].map((m) => `${m} /{namespace}/{id}`),
      ]),
    );
  });

  it("gives each route its statuses and the protocol's exact error strings", () => {
    expect(examples("/registry/register", "post", 400)).toEqual(
      expect.arrayContaining(["registration probe failed", "invalid json", "secret too short: at least 16 characters"]),
    );
    expect(examples("/registry/register", "post", 401)).toEqual(["unauthorized"]);
    expect(examples("/registry/register", "post", 403)).toEqual(
      expect.arrayContaining(["forbidden", "namespace not allowed: …"]),
    );
    expect(examples("/registry/register", "post", 409)).toContain("client belongs to another account");
    expect(examples("/registry/register", "post", 413)).toEqual(["body too large"]);
    expect(examples("/registry/heartbeat", "post", 409)).toEqual(
      expect.arrayContaining(["unknown session", "registration voided: challenge value mismatch on the advertise URL"]),
    );
    expect(examples("/registry/workers", "get", 503)).toEqual(["not the serving fleet"]);
    // /registry/health answers while not serving; health needs no credential.
    expect(operation("/registry/health", "get").responses["503"]).toBeUndefined();
    expect(operation("/healthz", "get").security).toEqual([]);
    expect(operation("/registry/drain", "post").security).toEqual([{ passport: [] }]);
    expect(operation("/registry/drain", "post")["x-pinboard-scope"]).toBe("pinboard:operator");
    expect(examples("/{namespace}/{id}", "get", 503).sort()).toEqual(Object.values(REFUSAL_ERRORS).sort());
    expect(examples("/{namespace}/{id}", "post", 404)).toEqual(["unknown namespace"]);
    // The history, every tenant's traffic, refuses a narrow claim as /metrics does.
    expect(examples("/registry/history", "get", 403)).toEqual(["forbidden"]);
    expect(operation("/registry/history", "get").responses["403"]?.description).toContain("narrower than");
  });

  it("describes request bodies with the schemas the routes validate with", () => {
    const register = schemaOf("/registry/register", "post");
    const registerRequired = "clientId secret namespaces advertiseUrl headroom draining challenge challengeValue";
    expect(register.required).toEqual(expect.arrayContaining(registerRequired.split(" ")));
    const takeover = register.properties?.takeover;
    expect(takeover?.anyOf ?? [takeover]).toEqual(
      expect.arrayContaining([expect.objectContaining({ enum: ["wind_down", "deny"] })]),
    );
    const ok = schemaOf("/registry/drain", "post", 200);
    expect(ok).toMatchObject({
      type: "object",
      properties: { drained: { const: true } },
      required: ["drained"],
      additionalProperties: false,
    });
  });

  it("the Node entry serves it too, without a credential, and it is the same document", async () => {
    const res = await fetch(`${node.url}/openapi.json`);
    expect(res.status).toBe(200);
    const served = (await res.json()) as Doc;
    expect(served.servers).toEqual([{ url: "/" }]);
    expect(served.paths).toEqual(doc.paths);
  });
});
