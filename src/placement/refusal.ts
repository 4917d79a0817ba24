import type { RefusalOutcome } from "../contract/refusal-outcomes.ts";
import { PinboardError } from "../errors/pinboard-error.ts";

/** The 503 `error` string of each refusal (docs/protocol.md, Refusals). */
export const REFUSAL_ERRORS: Readonly<Record<Exclude<RefusalOutcome, "unknown-ns">, string>> = {
  "no-backends": "no live backends for namespace",
  quarantine: "registry cold start, retry",
  "not-serving": "not the serving fleet",
  "no-hostname-workers": "no live workers for hostname",
  "binding-quarantine": "hostname binding displaced, retry",
  "env-conflict": "hostname bindings inconsistent, retry",
  "takeover-pending": "takeover in progress, retry",
  "takeover-denied": "placement held by another hostname",
  inflight: "worker inflight cap exceeded, retry",
  nack: "worker refused activation, retry",
};

/** A refused resolution, carrying the outcome it is counted under. */
export class Refusal extends PinboardError {
  constructor(
    readonly outcome: RefusalOutcome,
    remainingMs = 0,
  ) {
    const base =
      outcome === "unknown-ns"
        ? PinboardError.of(404, "unknown namespace")
        : PinboardError.refusal(REFUSAL_ERRORS[outcome], remainingMs);
    super(base.status, base.body, base.headers);
  }
}
