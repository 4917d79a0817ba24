/**
 * The worker's own view of its lease. Pinboard sets the lease to (its now + expiresInMs) when it
 * handles a register or heartbeat, which is never earlier than when the worker sent the call, so
 * by the worker's clock the lease surely holds until sentAt + expiresInMs. Two thresholds:
 *  - unhealthy, leaseUnhealthyAfterMs after the last renewal (default 2/3 of the TTL): the worker
 *    refuses new activations, so Pinboard places them on a worker that is heartbeating;
 *  - lapsed, from sentAt + expiresInMs − a margin for clock rate: Pinboard may already have given
 *    this worker's instances to another, so it serves nothing until a renewal comes back. That is
 *    what stops a process that was paused past its lease (a stop-the-world pause, SIGSTOP, a VM
 *    migration) from answering the requests that were waiting in its sockets.
 */
export class Lease {
  /** The TTL Pinboard last granted (expiresInMs). */
  ttlMs = 15_000;
  /** When the last renewal's answer arrived. */
  lastRenewalAt: number | null = null;
  /** Healthy → unhealthy transitions seen so far. */
  flaps = 0;
  /** Set between start() and stop() of the registration: a worker not in the loop holds no lease to lose. */
  held = false;
  private validUntil: number | null = null;
  private unhealthy = false;

  constructor(
    private readonly now: () => number,
    private readonly unhealthyAfterMs?: number,
  ) {}

  /**
   * A register or heartbeat sent at `sentAt` was answered 200 with `ttlMs` (when it named one).
   * True when the lease had lapsed before this renewal: Pinboard may have given any of this
   * worker's instances to another meanwhile, so no activation may go on as if it had not.
   */
  renewed(sentAt: number, ttlMs: unknown): boolean {
    const lapsedBefore = this.lapsed();
    if (typeof ttlMs === "number" && ttlMs > 0) this.ttlMs = ttlMs;
    this.lastRenewalAt = this.now();
    this.validUntil = sentAt + this.ttlMs - marginMs(this.ttlMs);
    this.healthy();
    return lapsedBefore;
  }

  /** True while renewed recently enough to take new activations; counts each healthy → unhealthy flap. */
  healthy(): boolean {
    if (!this.held) return true;
    const threshold = this.unhealthyAfterMs ?? Math.floor((this.ttlMs * 2) / 3);
    const last = this.lastRenewalAt;
    const healthy = last !== null && this.now() - last <= threshold;
    if (!healthy && !this.unhealthy && last !== null) this.flaps++;
    this.unhealthy = !healthy;
    return healthy;
  }

  /** True once the lease may have expired at Pinboard: nothing may be served until it is renewed. */
  lapsed(): boolean {
    return this.held && this.validUntil !== null && this.now() >= this.validUntil;
  }
}

/** Slack for the worker's and Pinboard's clocks running at slightly different rates: 5% of the TTL. */
function marginMs(ttlMs: number): number {
  return Math.ceil(ttlMs / 20);
}
