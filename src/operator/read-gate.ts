import { PinboardError } from "../errors/pinboard-error.ts";

/** Audit reads one node runs at once (each looks at 500 entries at most: audit-read.ts). */
export const AUDIT_READS_AT_ONCE = 2;
/** Audit reads waiting for a turn before the next is refused 503 `audit reads busy, retry`. */
export const AUDIT_READS_WAITING = 64;

/**
 * At most `limit` reads of one kind run at once on this node (or isolate); the others wait their
 * turn in arrival order, holding no Redis work, and past `maxWaiting` waiting a read is refused
 * with a 503 and Retry-After. Each read's own Redis work is bounded where it is made (the audit
 * read's entry budget); this bounds how many such budgets run side by side, so readers polling in
 * a tight loop take a bounded share of Redis, not one proportional to their number.
 */
export class ReadGate {
  #running = 0;
  readonly #waiting: Array<() => void> = [];

  constructor(
    readonly limit: number,
    readonly maxWaiting: number,
    readonly busyError: string,
  ) {}

  async run<T>(read: () => Promise<T>): Promise<T> {
    if (this.#running < this.limit) {
      this.#running++;
    } else {
      if (this.#waiting.length >= this.maxWaiting) throw PinboardError.refusal(this.busyError);
      // The finishing read hands its slot over: #running stays as it is.
      await new Promise<void>((resolve) => this.#waiting.push(resolve));
    }
    try {
      return await read();
    } finally {
      const next = this.#waiting.shift();
      if (next) next();
      else this.#running--;
    }
  }

  /** Reads running and waiting now. */
  get load(): { running: number; waiting: number } {
    return { running: this.#running, waiting: this.#waiting.length };
  }
}
