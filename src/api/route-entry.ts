import type { z } from "zod";
import type { BodySchema } from "../http/json-body.ts";

/** One route of the catalogue (./catalogue.ts): what it takes, what it answers, who may call it. */

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
