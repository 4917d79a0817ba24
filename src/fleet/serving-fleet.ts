import type { Config } from "../config/config.ts";
import { notServing } from "../errors/pinboard-error.ts";
import type { Logger } from "../log/logger.ts";
import type { Keys } from "../redis/keys.ts";
import { fleetClaim } from "../redis/lua/index.ts";
import type { RedisPort } from "../redis/port.ts";
import { RedisUnavailableError } from "../redis/redis-errors.ts";

/** Bumped when the Redis layout changes incompatibly; part of the fleet license. */
export const SCHEMA_VERSION = 1;

export interface FleetStatus {
  serving: boolean;
  reason?: string;
  checkedAt: number;
}

/**
 * This node's standing in the fleet: it serves only while it holds the fleet license
 * {schema, shards, hostnameAware, epoch} and passes cluster membership. The claim is renewed
 * every third of a lease: by a timer on Node, lazily on the next request on Workers, where an
 * isolate has no timers between requests.
 */
export class Fleet {
  readonly license: string;
  private status: FleetStatus = { serving: false, reason: "booting", checkedAt: -Infinity };
  private inflight: Promise<FleetStatus> | undefined;
  /** The last claim could not reach Redis: not ready, though still serving for up to a lease. */
  private unreachable = false;
  draining = false;

  constructor(
    private readonly deps: {
      config: Config;
      redis: RedisPort;
      keys: Keys;
      log: Logger;
      nodeId: string;
      now: () => number;
    },
  ) {
    const { config } = deps;
    this.license = JSON.stringify({
      schema: SCHEMA_VERSION,
      shards: config.shards,
      hostnameAware: config.hostnameAware,
      epoch: config.fleetEpoch,
    });
  }

  /** The last known status, renewed first when it is older than a third of a lease. */
  async current(): Promise<FleetStatus> {
    if (this.fresh()) return this.status;
    return this.refresh();
  }

  /** The status without touching Redis (for /registry/health and /readyz while Redis is slow). */
  peek(): FleetStatus {
    return this.status;
  }

  /** Claims (or renews) the license now; concurrent callers share one round trip. */
  refresh(): Promise<FleetStatus> {
    this.inflight ??= this.claim().finally(() => (this.inflight = undefined));
    return this.inflight;
  }

  private async claim(): Promise<FleetStatus> {
    const { redis, keys, config, log, nodeId, now } = this.deps;
    const was = this.status.serving;
    try {
      const claim = await fleetClaim(redis, keys, {
        nodeId,
        license: this.license,
        fleetEpoch: config.fleetEpoch,
        leaseTtlMs: config.leaseTtlMs,
      });
      this.unreachable = false;
      if (claim.kind === "serving") {
        this.status = { serving: true, checkedAt: now() };
      } else {
        const reason =
          claim.kind === "member"
            ? `member ${claim.nodeId} runs ${claim.license}, this node ${this.license}`
            : `fleet license is ${claim.license}, this node ${this.license}`;
        this.status = { serving: false, reason, checkedAt: now() };
      }
    } catch (err) {
      this.unreachable = true;
      // Fail closed after a full lease without a successful claim, not at the first hiccup.
      const stale = now() - this.status.checkedAt >= config.leaseTtlMs;
      const reason = `redis: ${err instanceof Error ? err.message : String(err)}`;
      this.status = stale ? { serving: false, reason, checkedAt: now() } : { ...this.status, reason };
    }
    if (was !== this.status.serving) {
      log[this.status.serving ? "info" : "warn"](this.status.serving ? "serving the fleet" : "not serving the fleet", {
        reason: this.status.reason,
      });
    }
    return this.status;
  }

  /** True when the last status is fresh and serving: what assertServing decides without Redis. */
  servingNow(): boolean {
    return this.status.serving && this.fresh();
  }

  private fresh(): boolean {
    return this.deps.now() - this.status.checkedAt < this.deps.config.leaseTtlMs / 3;
  }

  /**
   * Throws unless this node serves: 503 not the serving fleet, or 503 redis unavailable when
   * the reason is that Redis cannot be reached.
   */
  async assertServing(): Promise<void> {
    const status = await this.current();
    if (status.serving) return;
    if (this.unreachable) throw new RedisUnavailableError(status.reason ?? "fleet claim failed");
    throw notServing();
  }

  /** Ready for traffic: not draining, holding the license, passing membership, reaching Redis. */
  async ready(): Promise<boolean> {
    if (this.draining) return false;
    const status = await this.current();
    return status.serving && !this.unreachable;
  }
}
