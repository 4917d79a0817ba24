import { ROUTE_REPLY } from "../../src/api/catalogue.ts";

/**
 * Parses a 200 body of `route` ("POST /registry/tag") with the route's reply schema (strict:
 * exact keys, the protocol's types and literals); throws with the route and zod's issues.
 */
export function expectRouteOk(route: string, text: string, context = ""): unknown {
  const schema = ROUTE_REPLY[route];
  if (!schema) throw new Error(`no 200 schema for ${route}`);
  let body: unknown;
  try {
    body = JSON.parse(text);
  } catch {
    throw new Error(`${route} 200 is not JSON: ${text.slice(0, 200)} ${context}`);
  }
  const parsed = schema.safeParse(body);
  if (!parsed.success) {
    throw new Error(
      `${route} 200 does not match the contract: ${JSON.stringify(parsed.error.issues).slice(0, 800)}\n  body: ${text.slice(0, 400)}\n  ${context}`,
    );
  }
  return parsed.data;
}
