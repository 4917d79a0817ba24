import type { AppDeps } from "../deps/app-deps.ts";
import { RequestBudgetSpent, type RequestMeter } from "../redis/request-meter.ts";

/** Kept off the platform's cap by default: the pass's own count is exact, this is headroom for what it cannot see. */
const CAP_MARGIN = 5;

/**
 * The subrequests one sweep pass may make: PINBOARD_SWEEP_SUBREQUEST_BUDGET, else the runtime's
 * per-invocation cap less a margin (45 of the Workers Free plan's 50), else no limit (Node).
 */
export function sweepSubrequestLimit(deps: Pick<AppDeps, "config" | "runtime">): number {
  const cap = deps.runtime.subrequestsPerInvocation;
  return deps.config.sweepSubrequestBudget ?? (cap === undefined ? Infinity : Math.max(1, cap - CAP_MARGIN));
}

/**
 * One pass's subrequest budget: every Redis request and worker call of the pass draws one from
 * it before it goes out, and a draw past the limit throws RequestBudgetSpent. A part can be held
 * back for the end of the pass (the lease release); stages check `canSpend` before a unit of
 * work so that they stop between units rather than in the middle of one.
 */
export class SubrequestBudget implements RequestMeter {
  private spent = 0;
  private held = 0;

  constructor(readonly limit: number) {}

  /** Requests made so far. */
  get used(): number {
    return this.spent;
  }

  /** Requests that may still go out (the held part excluded). */
  get left(): number {
    return this.limit - this.spent - this.held;
  }

  take(): void {
    if (this.left < 1) throw new RequestBudgetSpent(this.limit);
    this.spent++;
  }

  /** Keeps `n` requests back until `free(n)`. */
  hold(n: number): void {
    this.held += n;
  }

  free(n: number): void {
    this.held = Math.max(0, this.held - n);
  }

  /** Whether `cost` more requests still leave `fraction` of the limit to the stages after this one. */
  canSpend(cost: number, fraction = 0): boolean {
    const reserve = Number.isFinite(this.limit) ? Math.ceil(this.limit * fraction) : 0;
    return this.left - cost >= reserve;
  }
}

/** True for the error of a spent budget: the stage that met it stops, the pass goes on to its end. */
export function budgetSpent(err: unknown): boolean {
  return err instanceof RequestBudgetSpent;
}
