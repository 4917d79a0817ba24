import type { ControlMessage } from "./control-messages.ts";
import type { InstanceTable } from "./instance-table.ts";
import type { LiveInstance } from "./live-instance.ts";
import type { PinnedLogger } from "./types.ts";

export interface WindDownDeps {
  table: InstanceTable;
  /** Releases the placement quoting the activation's epoch. */
  release(live: LiveInstance): Promise<boolean>;
  log: PinnedLogger;
  now(): number;
  /** How long requests in flight at the deadline may still run before the instance goes. */
  graceMs: number;
}

interface Pending {
  timer: ReturnType<typeof setTimeout>;
  live: LiveInstance;
}

/**
 * wind_down control messages and timed operator drains. Until the deadline the instance serves
 * as usual; at the deadline it refuses new requests (the in-band refusal, so Pinboard re-places
 * them), lets in-flight ones finish, closes its sockets (1012), and releases its placement
 * quoting its epoch. A null deadline revokes a pending wind-down. A message is tied to the
 * activation resident when it arrived: if that activation is gone or replaced by a newer epoch
 * by the deadline, nothing happens (Pinboard re-notifies the new owner itself).
 */
export class WindDowns {
  private readonly pending = new Map<string, Pending>();
  private drainTimer: { timer: ReturnType<typeof setTimeout>; at: number } | null = null;

  constructor(private readonly deps: WindDownDeps) {}

  handle(message: ControlMessage): void {
    if (message.type !== "wind_down") {
      this.deps.log.warn("unknown control message acked", { type: message.type });
      return;
    }
    const key = `${message.ns}/${message.id}`;
    const existing = this.pending.get(key);
    if (existing) {
      clearTimeout(existing.timer);
      this.pending.delete(key);
    }
    if (message.deadline === null) {
      if (existing) this.deps.log.info("wind-down revoked", { ns: message.ns, id: message.id });
      return;
    }
    const live = this.deps.table.get(message.ns, message.id);
    if (!live) return;
    const timer = setTimeout(
      () => {
        if (this.pending.get(key)?.timer === timer) this.pending.delete(key);
        void this.windDown(live);
      },
      Math.max(0, message.deadline * 1000),
    );
    timer.unref?.();
    this.pending.set(key, { timer, live });
  }

  /** Follows Pinboard's view of the drain: a timed drain winds everything down at its deadline. */
  drain(draining: boolean, deadlineSeconds: number | undefined): void {
    if (!draining || deadlineSeconds === undefined) {
      if (this.drainTimer) clearTimeout(this.drainTimer.timer);
      this.drainTimer = null;
      return;
    }
    const at = this.deps.now() + deadlineSeconds * 1000;
    // Heartbeats re-send the remaining seconds, rounded: keep the timer unless the deadline moved.
    if (this.drainTimer && Math.abs(this.drainTimer.at - at) <= 1500) return;
    if (this.drainTimer) clearTimeout(this.drainTimer.timer);
    const timer = setTimeout(() => void this.windDownAll(), Math.max(0, at - this.deps.now()));
    timer.unref?.();
    this.drainTimer = { timer, at };
  }

  async windDownAll(): Promise<void> {
    await Promise.all(this.deps.table.all().map((live) => this.windDown(live)));
  }

  async windDown(live: LiveInstance): Promise<void> {
    try {
      if (!(await this.deps.table.windDown(live, this.deps.graceMs))) return;
      const released = await this.deps.release(live);
      this.deps.log.info("instance wound down", { ns: live.ns, id: live.id, epoch: live.epoch, released });
    } catch (err) {
      this.deps.log.error("wind-down failed", { ns: live.ns, id: live.id, error: String(err) });
    }
  }

  cancelAll(): void {
    for (const { timer } of this.pending.values()) clearTimeout(timer);
    this.pending.clear();
    if (this.drainTimer) clearTimeout(this.drainTimer.timer);
    this.drainTimer = null;
  }
}
