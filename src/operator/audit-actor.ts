import type { Context } from "hono";
import type { AuditActor } from "../audit/entry.ts";
import { VIA_HEADER, viaOf } from "../audit/via.ts";
import type { AppEnv } from "../deps/app-deps.ts";

/** Who an operator request's action is recorded as: the credential's sub, and its Pinboard-Via. */
export function actorOf(c: Context<AppEnv>): AuditActor {
  return { subject: c.var.principal.sub, via: viaOf(c.req.header(VIA_HEADER)) };
}
