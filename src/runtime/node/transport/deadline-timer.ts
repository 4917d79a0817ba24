/**
 * Something with a deadline: `expire()` is called once, when it has passed. The `timer*` fields
 * belong to the DeadlineTimer the item is pending in (its place in the timer's list); the item
 * never touches them.
 */
export interface Expiring {
  readonly expiresAt: number;
  expire(): void;
  timerOwner?: object | undefined;
  timerPrev?: Expiring | undefined;
  timerNext?: Expiring | undefined;
}

/**
 * Pending items checked against their deadlines by one interval timer, which runs while any are
 * pending. It replaces a setTimeout and clearTimeout per forward (a Timeout object, list links,
 * async-id bookkeeping each time), measured with `npm run bench:ab`. An item expires up to one
 * tick after its deadline.
 *
 * The pending items form a list linked through the items themselves, so adding and removing one
 * allocates nothing. A Set here re-allocated its hash table whenever a removal left it nearly
 * empty, which at a low request rate is every forward; the table, held by a long-lived timer,
 * survived young-generation collections and fed the old space (`--trace-gc-nvp`).
 */
export class DeadlineTimer<T extends Expiring> {
  private head: T | undefined;
  private count = 0;
  private timer: ReturnType<typeof setInterval> | undefined;

  constructor(
    private readonly tickMs: number,
    readonly now: () => number = () => performance.now(),
  ) {}

  add(item: T): void {
    if (item.timerOwner === this) return;
    item.timerOwner = this;
    item.timerPrev = undefined;
    item.timerNext = this.head;
    if (this.head) this.head.timerPrev = item;
    this.head = item;
    this.count++;
    if (this.timer) return;
    this.timer = setInterval(() => this.sweep(), this.tickMs);
    // Whatever an item guards keeps the process alive on its own (a forward: its socket).
    this.timer.unref?.();
  }

  delete(item: T): void {
    if (item.timerOwner !== this) return;
    const { timerPrev: prev, timerNext: next } = item;
    if (prev) prev.timerNext = next;
    else this.head = next as T | undefined;
    if (next) next.timerPrev = prev;
    item.timerOwner = item.timerPrev = item.timerNext = undefined;
    this.count--;
  }

  get size(): number {
    return this.count;
  }

  private sweep(): void {
    // Stopped lazily, on a tick with nothing pending: a steady trickle of items keeps one timer.
    if (this.count === 0) {
      clearInterval(this.timer);
      this.timer = undefined;
      return;
    }
    const now = this.now();
    let due: T[] | undefined;
    for (let item = this.head; item; item = item.timerNext as T | undefined) {
      if (item.expiresAt <= now) (due ??= []).push(item);
    }
    if (!due) return;
    // Collected first: an item's expire() may remove others from the list.
    for (const item of due) {
      if (item.timerOwner !== this) continue;
      this.delete(item);
      item.expire();
    }
  }
}
