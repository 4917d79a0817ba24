import { expect } from "vitest";
import type { AuditEntry } from "../../src/audit/entry.ts";
import type { TestPinboard } from "./pinboard-app.ts";
import type { TestRedis } from "./redis.ts";
import { expectRouteOk } from "./route-answers.ts";

/** A GET /registry/audit answer, checked against the route's strict answer schema. */
export interface AuditAnswer {
  entries: AuditEntry[];
  cursor?: string;
}

/** GET /registry/audit{query} as `token`: a 200 parsed with the contract's schema, or throws. */
export async function readTrail(pb: TestPinboard, token: string, query = ""): Promise<AuditAnswer> {
  const res = await pb.call("GET", `/registry/audit${query}`, { token });
  const text = await res.text();
  expect(res.status, text).toBe(200);
  return expectRouteOk("GET /registry/audit", text) as AuditAnswer;
}

/** The newest entry of `type` the credential sees whose target names `key` = `value`. */
export async function newestOf(
  pb: TestPinboard,
  token: string,
  type: AuditEntry["type"],
  match: Partial<Record<"clientId" | "sessionId" | "namespace" | "id", string>> = {},
): Promise<AuditEntry | undefined> {
  const { entries } = await readTrail(pb, token, `?type=${type}&limit=500`);
  const target = (e: AuditEntry) => e.target as Record<string, unknown>;
  return entries.find((e) => Object.entries(match).every(([k, v]) => target(e)[k] === v));
}

/** The stream's entry ids, newest first, read from Redis directly. */
export async function streamIds(t: TestRedis, key = "pinboard:{global}:audit"): Promise<string[]> {
  const raw = (await t.redis.client.xrevrange(key, "+", "-")) as Array<[string, string[]]>;
  return raw.map(([id]) => id);
}
