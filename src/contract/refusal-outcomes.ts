/**
 * The resolve outcomes that refuse: all 503 but unknown-ns (404 unknown namespace). The one list
 * of them; its order is the order the history's refusals and the console's colours follow. No
 * imports, so the console page (browser code) can take it as it is.
 */
export const REFUSAL_OUTCOMES = [
  "unknown-ns",
  "no-backends",
  "quarantine",
  "not-serving",
  "no-hostname-workers",
  "binding-quarantine",
  "takeover-pending",
  "env-conflict",
  "nack",
  "takeover-denied",
  "inflight",
] as const;

export type RefusalOutcome = (typeof REFUSAL_OUTCOMES)[number];
