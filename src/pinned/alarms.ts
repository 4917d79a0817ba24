import { type DurabilityStore, type InstanceRef, StaleEpochError } from "./durability.ts";
import type { AlarmInfo, PinnedLogger } from "./types.ts";

export interface AlarmDeps {
  store: DurabilityStore;
  ref: InstanceRef;
  epoch: string;
  /** Runs the instance's alarm() handler (counted as in-flight work). */
  run(info: AlarmInfo): Promise<void>;
  onStale(err: StaleEpochError): void;
  /** The worker's lease lapsed: a due alarm waits (LAPSED_RECHECK_MS at a time) until it is renewed. */
  lapsed(): boolean;
  log: PinnedLogger;
  now(): number;
}

/** Attempts per due alarm, the first included; retries back off 1 s, 2 s, 4 s, … */
export const ALARM_ATTEMPTS = 6;
const MAX_TIMER_MS = 2 ** 31 - 1;
/** How often a due alarm looks again while the lease has lapsed (the instance may be evicted meanwhile). */
export const LAPSED_RECHECK_MS = 1000;

export type SweepOutcome = "fired" | "not-due" | "running";

/**
 * The alarm of one activation: the stored due time and the owner's own timer for it. Like
 * Durable Objects alarms it fires at least once: the stored alarm is cleared only after alarm()
 * returns, and only if alarm() did not set a new one meanwhile. A throwing alarm() is retried
 * with backoff, ALARM_ATTEMPTS times in all, then dropped. Changes to the stored alarm are
 * serialised so the index write of one never overtakes another's.
 */
export class InstanceAlarm {
  private at: number | null = null;
  private version = 0;
  private retryCount = 0;
  private retryAt: number | null = null;
  private timer: ReturnType<typeof setTimeout> | null = null;
  private firing: Promise<boolean> | null = null;
  private chain: Promise<unknown> = Promise.resolve();
  private stopped = false;

  constructor(private readonly deps: AlarmDeps) {}

  /** Arms the timer for the alarm found in the store at activation. */
  start(at: number | null): void {
    this.at = at;
    this.arm();
  }

  get(): number | null {
    return this.at;
  }

  get running(): boolean {
    return this.firing !== null;
  }

  set(at: number | null): Promise<void> {
    const due = at === null ? null : Math.floor(at);
    return this.serial(async () => {
      await this.guard(() => this.deps.store.setAlarm(this.deps.ref, this.deps.epoch, due));
      this.at = due;
      this.version++;
      this.retryCount = 0;
      this.retryAt = null;
      this.arm();
    });
  }

  /** The store dropped the alarm (storage.deleteAll). */
  forget(): void {
    this.at = null;
    this.version++;
    this.retryAt = null;
    this.arm();
  }

  stop(): void {
    this.stopped = true;
    if (this.timer) clearTimeout(this.timer);
    this.timer = null;
  }

  /** The sweeper's _alarm: fire now if due, or report that the owner's timer is on it. */
  async sweep(): Promise<SweepOutcome> {
    if (this.firing) return "running";
    return (await this.fireIfDue()) ? "fired" : "not-due";
  }

  private serial<T>(op: () => Promise<T>): Promise<T> {
    const next = this.chain.then(op, op);
    this.chain = next.catch(() => {});
    return next;
  }

  private async guard<T>(op: () => Promise<T>): Promise<T> {
    try {
      return await op();
    } catch (err) {
      if (err instanceof StaleEpochError) this.deps.onStale(err);
      throw err;
    }
  }

  private arm(): void {
    if (this.timer) clearTimeout(this.timer);
    this.timer = null;
    if (this.stopped || this.firing) return;
    const target = this.retryAt ?? this.at;
    if (target === null) return;
    const delay = Math.min(Math.max(0, target - this.deps.now()), MAX_TIMER_MS);
    this.timer = setTimeout(() => {
      this.timer = null;
      if (this.retryAt !== null && this.retryAt > this.deps.now()) return this.arm();
      this.retryAt = null;
      if (this.deps.lapsed()) {
        this.retryAt = this.deps.now() + LAPSED_RECHECK_MS;
        return this.arm();
      }
      this.fireIfDue().then(
        (fired) => fired || this.arm(),
        () => {},
      );
    }, delay);
    this.timer.unref?.();
  }

  /** Runs alarm() when the stored alarm is due; rejects with StaleEpochError when fenced. */
  private fireIfDue(): Promise<boolean> {
    if (this.firing) return this.firing;
    const at = this.at;
    if (this.stopped || at === null || at > this.deps.now()) return Promise.resolve(false);
    const version = this.version;
    const retryCount = this.retryCount;
    this.firing = (async () => {
      try {
        await this.deps.run({ retryCount, isRetry: retryCount > 0 });
      } catch (err) {
        if (err instanceof StaleEpochError) {
          this.deps.onStale(err);
          throw err;
        }
        this.deps.log.error("alarm handler failed", {
          ns: this.deps.ref.ns,
          id: this.deps.ref.id,
          attempt: retryCount + 1,
          error: err instanceof Error ? err.message : String(err),
        });
        if (retryCount + 1 < ALARM_ATTEMPTS && this.version === version) {
          this.retryCount = retryCount + 1;
          this.retryAt = this.deps.now() + 1000 * 2 ** retryCount;
          return true;
        }
      }
      this.retryCount = 0;
      await this.serial(async () => {
        if (this.version !== version || this.at !== at) return;
        try {
          await this.guard(() => this.deps.store.clearAlarm(this.deps.ref, this.deps.epoch, at));
          this.at = null;
        } catch (err) {
          if (err instanceof StaleEpochError) throw err;
          // The store is unreachable: the alarm stays stored and fires again (at least once).
          this.deps.log.warn("alarm clear failed", { ns: this.deps.ref.ns, id: this.deps.ref.id });
          this.retryAt = this.deps.now() + 1000;
        }
      });
      return true;
    })().finally(() => {
      this.firing = null;
      this.arm();
    });
    return this.firing;
  }
}
