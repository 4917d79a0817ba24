/** Something with a deadline: `expire()` is called once, when it has passed. */
export interface Expiring {
  readonly expiresAt: number;
  expire(): void;
}

/**
 * Pending items checked against their deadlines by one interval timer, which runs while any are
 * pending: adding and removing an item is a Set operation. It replaces a setTimeout and
 * clearTimeout per forward (a Timeout object, list links, async-id bookkeeping each time),
 * measured with `npm run bench:ab`. An item expires up to one tick after its deadline.
 */
export class DeadlineTimer<T extends Expiring> {
  private readonly pending = new Set<T>();
  private timer: ReturnType<typeof setInterval> | undefined;

  constructor(
    private readonly tickMs: number,
    readonly now: () => number = () => performance.now(),
  ) {}

  add(item: T): void {
    this.pending.add(item);
    if (this.timer) return;
    this.timer = setInterval(() => this.sweep(), this.tickMs);
    // Whatever an item guards keeps the process alive on its own (a forward: its socket).
    this.timer.unref?.();
  }

  delete(item: T): void {
    this.pending.delete(item);
  }

  get size(): number {
    return this.pending.size;
  }

  private sweep(): void {
    // Stopped lazily, on a tick with nothing pending: a steady trickle of items keeps one timer.
    if (this.pending.size === 0) {
      clearInterval(this.timer);
      this.timer = undefined;
      return;
    }
    const now = this.now();
    for (const item of this.pending) {
      if (item.expiresAt > now) continue;
      this.pending.delete(item);
      item.expire();
    }
  }
}
