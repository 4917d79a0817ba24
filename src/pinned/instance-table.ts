import { type DurabilityStore, StaleEpochError } from "./durability.ts";
import { EndedEpochs } from "./ended-epochs.ts";
import { DEFAULT_ACTIVATION_TIMEOUT_MS, GATES_ON, type GateSettings, LiveInstance } from "./live-instance.ts";
import type { RefusalReason } from "./responses.ts";
import type { InstanceClass, PinnedLogger } from "./types.ts";

export class RefusedError extends Error {
  constructor(readonly reason: RefusalReason) {
    super(`activation refused: ${reason}`);
    this.name = "RefusedError";
  }
}

export class ActivationError extends Error {
  constructor(cause: unknown) {
    super(`activation failed: ${cause instanceof Error ? cause.message : String(cause)}`, { cause });
    this.name = "ActivationError";
  }
}

export interface TableDeps {
  classes: ReadonlyMap<string, InstanceClass>;
  store: DurabilityStore;
  hostname?: string;
  maxInstances: number;
  /** How long an activation waits for the durability store. Default DEFAULT_ACTIVATION_TIMEOUT_MS. */
  activationTimeoutMs?: number;
  /** Why a new activation must be refused right now (draining, lease unhealthy), or null. */
  refusal(): RefusalReason | null;
  /** The worker's lease may have expired at Pinboard: no activation may serve (Lease.lapsed). */
  lapsed(): boolean;
  log: PinnedLogger;
  now(): number;
  /** Default GATES_ON. */
  gates?: GateSettings;
}

/** WebSocket close code for sockets of an instance that moved or wound down: reconnect. */
export const CLOSE_MOVED = 1012;
/** WebSocket close code for sockets of an instance dropped after a failed storage write. */
export const CLOSE_WRITE_FAILED = 1011;

const keyOf = (ns: string, id: string) => `${ns}/${id}`;

/**
 * The resident instances, one activation per (ns, id), and the epoch guard:
 *  - a request at a lower epoch than the activation's is stale (StaleEpochError → 409);
 *  - an equal one is served by the activation;
 *  - a higher one retires the activation (its sockets close with 1012) and activates afresh
 *    from the durability store at the new epoch, which claims the instance there.
 * New activations (also at a higher epoch) are refused while `refusal()` says so or at
 * maxInstances, and every request while the lease has lapsed: Pinboard may have placed the
 * instance elsewhere by then, so serving it from here could answer beside its new owner. For the
 * same reason an activation retired here is not created again at its epoch (EndedEpochs): the
 * forward is refused in-band, and Pinboard re-places it where the instance is now. Only a failure
 * to activate or to write (drop) leaves the epoch open for the next request.
 */
export class InstanceTable {
  private readonly live = new Map<string, LiveInstance>();
  private readonly ended: EndedEpochs;

  constructor(private readonly deps: TableDeps) {
    this.ended = new EndedEpochs(deps.now);
  }

  get size(): number {
    return this.live.size;
  }

  get(ns: string, id: string): LiveInstance | undefined {
    return this.live.get(keyOf(ns, id));
  }

  all(): LiveInstance[] {
    return [...this.live.values()];
  }

  inflight(): number {
    let n = 0;
    for (const live of this.live.values()) n += live.inflight;
    return n;
  }

  /**
   * The activation for (ns, id) at `epoch`, entered (in-flight + 1): the caller must leave().
   * Throws StaleEpochError, RefusedError or ActivationError.
   */
  async acquire(ns: string, id: string, epoch: string): Promise<LiveInstance> {
    const key = keyOf(ns, id);
    const value = BigInt(epoch);
    let live = this.live.get(key);
    if (live && value < live.epochValue) throw new StaleEpochError(epoch, live.epoch);
    if (!live || value > live.epochValue) {
      if (this.ended.ended(key, value)) throw new RefusedError("epoch-ended");
      const reason = this.deps.refusal() ?? (!live && this.live.size >= this.deps.maxInstances ? "capacity" : null);
      if (reason) {
        if (live) this.retire(live);
        throw new RefusedError(reason);
      }
      if (live) this.retire(live);
      live = this.create(ns, id, epoch);
    }
    if (live.closing) throw new RefusedError("winding-down");
    live.enter();
    try {
      await live.ready;
    } catch (err) {
      live.leave();
      if (err instanceof StaleEpochError) {
        if (this.live.get(key) === live) this.retire(live);
        throw err;
      }
      if (this.live.get(key) === live) this.drop(live);
      throw new ActivationError(err);
    }
    const current = this.live.get(key);
    if (current !== live) {
      live.leave();
      if (current && current.epochValue > value) throw new StaleEpochError(epoch, current.epoch);
      throw new RefusedError("evicted");
    }
    if (this.deps.lapsed()) {
      // The refusal makes Pinboard release the placement and place it anew: this activation is
      // done, and a forward still on its way at this epoch must not find it once the lease is back.
      live.leave();
      this.retire(live);
      throw new RefusedError("lease-lapsed");
    }
    return live;
  }

  private create(ns: string, id: string, epoch: string): LiveInstance {
    const cls = this.deps.classes.get(ns);
    if (!cls) throw new Error(`no instance class for namespace ${ns}`);
    const live = new LiveInstance({
      ns,
      id,
      epoch,
      cls,
      store: this.deps.store,
      hostname: this.deps.hostname,
      activationTimeoutMs: this.deps.activationTimeoutMs ?? DEFAULT_ACTIVATION_TIMEOUT_MS,
      log: this.deps.log,
      now: this.deps.now,
      lapsed: this.deps.lapsed,
      onStale: (stale, err) => {
        if (this.live.get(keyOf(ns, id)) !== stale) return;
        this.deps.log.warn("instance fenced by a newer epoch", { ns, id, epoch: stale.epoch, stored: err.stored });
        this.retire(stale);
      },
      onBroken: (broken, error) => {
        if (error instanceof StaleEpochError) return; // onStale retired it
        this.deps.log.error(
          "storage write failed: instance dropped, it re-activates from storage on its next request",
          {
            ns,
            id,
            epoch: broken.epoch,
            error: error instanceof Error ? error.message : String(error),
          },
        );
        this.drop(broken, CLOSE_WRITE_FAILED, "storage write failed");
      },
      gates: this.deps.gates ?? GATES_ON,
    });
    this.live.set(keyOf(ns, id), live);
    return live;
  }

  /**
   * Drops the activation from the table (if it is still there) and retires it; its epoch ended
   * here, so a later forward at it is refused rather than served by a fresh activation.
   */
  retire(live: LiveInstance, code = CLOSE_MOVED, reason = "instance moved"): void {
    this.ended.end(keyOf(live.ns, live.id), live.epochValue);
    this.drop(live, code, reason);
  }

  /** Retires an activation that failed (to activate, to write): the next request at its epoch activates it again. */
  private drop(live: LiveInstance, code = CLOSE_MOVED, reason = "instance moved"): void {
    const key = keyOf(live.ns, live.id);
    if (this.live.get(key) === live) this.live.delete(key);
    live.retire(code, reason);
  }

  /**
   * Winds an activation down: new requests are refused, in-flight ones get up to `timeoutMs`
   * to finish, then it retires. True when it was still the current activation.
   */
  async windDown(live: LiveInstance, timeoutMs: number): Promise<boolean> {
    if (this.live.get(keyOf(live.ns, live.id)) !== live) return false;
    live.closing = true;
    const idle = await live.idle(timeoutMs);
    if (!idle) this.deps.log.warn("wind-down deadline passed with requests in flight", { ns: live.ns, id: live.id });
    const current = this.live.get(keyOf(live.ns, live.id)) === live;
    this.retire(live, CLOSE_MOVED, "instance wound down");
    return current;
  }

  /** Resolves true once nothing is in flight anywhere, false after `timeoutMs`. */
  async idle(timeoutMs: number): Promise<boolean> {
    const deadline = this.deps.now() + timeoutMs;
    for (const live of this.live.values()) {
      if (!(await live.idle(Math.max(0, deadline - this.deps.now())))) return false;
    }
    return true;
  }

  closeAll(code: number, reason: string): void {
    for (const live of this.all()) this.retire(live, code, reason);
  }
}
