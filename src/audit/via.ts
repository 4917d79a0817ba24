import { z } from "zod";
import type { AuditVia } from "./entry.ts";

/**
 * The request header by which the console and the CLI say how an operator action came, for the
 * audit trail: `Pinboard-Via: console` or `cli`. Anything else, or none, records `api`. It is a
 * label, not a credential: whoever holds the operator credential can send any of them.
 */
export const VIA_HEADER = "Pinboard-Via";

const declaredVia = z.enum(["console", "cli"]);

/** The via an action records for the header's value (absent, unknown or malformed: "api"). */
export function viaOf(header: string | undefined): AuditVia {
  const parsed = declaredVia.safeParse(header?.trim().toLowerCase());
  return parsed.success ? parsed.data : "api";
}
