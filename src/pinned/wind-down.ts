import type { ControlMessage } from "./control-messages.ts";
import type { InstanceTable } from "./instance-table.ts";
import type { LiveInstance } from "./live-instance.ts";
import type { PinnedLogger } from "./types.ts";

export interface WindDownDeps {
  table: InstanceTable;
  /** Releases the placements quoting the activations' epochs (one call). */
  release(lives: LiveInstance[]): Promise<boolean>;
  /** A timed operator drain's deadline passed (drain-end.ts takes it from there). */
  drainDeadlinePassed(): void;
  log: PinnedLogger;
  now(): number;
  /** How long requests in flight at the deadline may still run before the instance goes. */
  graceMs: number;
}

interface Pending {
  timer: ReturnType<typeof setTimeout>;
  live: LiveInstance;
}

/** Placements per release call: far under the 1 MiB body limit with ids of 256 characters. */
const RELEASE_BATCH = 500;

/**
 * wind_down control messages, timed operator drains and the hand-over of a graceful stop. Until the deadline the instance serves
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

  /**
   * Pinboard frees the row `deadline` seconds (rounded down) after it read the message for a
   * heartbeat that left `sinceSentMs` ago: counted from that sending, the instance winds down no
   * later than Pinboard lets another worker take it.
   */
  handle(message: ControlMessage, sinceSentMs = 0): void {
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
      Math.max(0, message.deadline * 1000 - sinceSentMs),
    );
    timer.unref?.();
    this.pending.set(key, { timer, live });
  }

  /** Follows Pinboard's view of the drain: a timed drain winds everything down at `endsAt` (this worker's clock, ms). */
  drain(draining: boolean, endsAt: number | undefined): void {
    if (!draining || endsAt === undefined) {
      if (this.drainTimer) clearTimeout(this.drainTimer.timer);
      this.drainTimer = null;
      return;
    }
    const at = endsAt;
    // Heartbeats re-send the remaining seconds, rounded: keep the timer unless the deadline moved.
    if (this.drainTimer && Math.abs(this.drainTimer.at - at) <= 1500) return;
    if (this.drainTimer) clearTimeout(this.drainTimer.timer);
    const timer = setTimeout(() => this.deps.drainDeadlinePassed(), Math.max(0, at - this.deps.now()));
    timer.unref?.();
    this.drainTimer = { timer, at };
  }

  async windDownAll(): Promise<void> {
    await Promise.all(this.deps.table.all().map((live) => this.windDown(live)));
  }

  async windDown(live: LiveInstance): Promise<void> {
    try {
      if (!(await this.deps.table.windDown(live, this.deps.graceMs))) return;
      const released = await this.deps.release([live]);
      this.deps.log.info("instance wound down", { ns: live.ns, id: live.id, epoch: live.epoch, released });
    } catch (err) {
      this.deps.log.error("wind-down failed", { ns: live.ns, id: live.id, error: String(err) });
    }
  }

  /**
   * A graceful stop's hand-over: every resident instance refuses new requests at once (the in-band
   * refusal: Pinboard releases and re-places them elsewhere), and is released quoting its epoch as
   * soon as its requests in flight are done (or `graceMs` passed), so the next request places it
   * on another worker without waiting for this worker's lease to run out. Idle instances go in
   * one release call; each busy one in its own when it is done. Resolves once all are released.
   */
  async handOver(graceMs: number): Promise<void> {
    const all = this.deps.table.all();
    for (const live of all) live.closing = true;
    const idle = all.filter((live) => live.inflight === 0);
    const busy = all.filter((live) => live.inflight > 0);
    await Promise.all([
      this.releaseWhenDone(idle, graceMs),
      ...busy.map((live) => this.releaseWhenDone([live], graceMs)),
    ]);
  }

  private async releaseWhenDone(lives: LiveInstance[], graceMs: number): Promise<void> {
    try {
      const done = await Promise.all(
        lives.map(async (live) => ((await this.deps.table.windDown(live, graceMs)) ? live : null)),
      );
      const current = done.filter((live) => live !== null);
      for (let i = 0; i < current.length; i += RELEASE_BATCH) {
        const batch = current.slice(i, i + RELEASE_BATCH);
        const released = await this.deps.release(batch);
        this.deps.log.info("instances handed over", { count: batch.length, released });
      }
    } catch (err) {
      this.deps.log.error("hand-over failed", { count: lives.length, error: String(err) });
    }
  }

  cancelAll(): void {
    for (const { timer } of this.pending.values()) clearTimeout(timer);
    this.pending.clear();
    if (this.drainTimer) clearTimeout(this.drainTimer.timer);
    this.drainTimer = null;
  }
}
