import type { z } from "zod";
import type { BodySchema } from "./json-body.ts";

/**
 * One HTTP route, declared once: what it takes, what it answers and who may call it. The Hono
 * registration (./mount-routes.ts), the request validation, /openapi.json (src/api/openapi.ts)
 * and the CLI's parsing of replies (src/cli/replies.ts) all read the declaration.
 */

/** The Passport scope a route requires, or none. */
export type RequiredCredential = "none" | "pinboard:worker" | "pinboard:operator";

/** An error answer a route may give: its status, exact `error` strings and when. */
export interface ErrorAnswer {
  status: number;
  /** The exact `error` strings of this status (a `…` stands for the named value). */
  errors: string[];
  when: string;
}

export interface RouteDeclaration<Body = unknown, Reply extends z.ZodType = z.ZodType> {
  method: "get" | "post";
  /** Under the base path. */
  path: string;
  summary: string;
  tag: "health" | "worker" | "operator" | "description" | "console";
  credential: RequiredCredential;
  /** False for the routes that answer while this node is not serving. */
  servingOnly: boolean;
  /** The JSON body: validated before the handler runs (413 and 400 `expected {…}`). */
  body?: BodySchema<Body>;
  /** The query parameters, documented; the route's own parser gives their 400s. */
  query?: Record<string, { description: string }>;
  /** The schema of the 200 body (the reply); absent for a route that answers no JSON. */
  reply?: Reply;
  replyDescription: string;
  /** The route's own error answers (./shared-errors.ts adds those every guarded route may give). */
  errors: ErrorAnswer[];
}

/** A table of declarations by name: a domain's routes, in the order they are registered. */
export type RouteTable = Record<string, RouteDeclaration>;
