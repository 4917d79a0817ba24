import { REFUSAL_OUTCOMES } from "../contract/refusal-outcomes.ts";

/**
 * What GET /registry/history counts refusals under: every refusing resolve outcome, then the
 * forwards Pinboard itself answered 502 (worker unreachable) and 504 (upstream timeout). A
 * worker's own 502 or 504 is a forward like any other answer. The console colours the kinds in
 * this order.
 */
export const REFUSAL_KINDS = [...REFUSAL_OUTCOMES, "bad_gateway", "upstream_timeout"] as const;

export type RefusalKind = (typeof REFUSAL_KINDS)[number];
