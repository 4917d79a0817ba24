/** How long an ended epoch is remembered: far past Pinboard's default forward timeout (30 s). */
export const ENDED_EPOCH_MEMORY_MS = 300_000;
/** At most this many instances' ended epochs are remembered; the oldest go first. */
export const ENDED_EPOCH_LIMIT = 100_000;

/**
 * The epochs whose activation ended on this worker while Pinboard may have placed the instance
 * elsewhere (moved, fenced, wound down, placed elsewhere, retired after the lease lapsed), per
 * instance. A forward still on its way at such an epoch must not create the activation afresh:
 * the instance may have a newer owner by now, and a fresh activation at the old epoch would serve
 * beside it. A durable instance's store would refuse it once the new owner has written, but what
 * it answers from memory, and every in-memory instance, is fenced by nothing else.
 */
export class EndedEpochs {
  /** key → highest ended epoch and when it was recorded; kept in recording order. */
  private readonly ends = new Map<string, { epoch: bigint; at: number }>();

  constructor(
    private readonly now: () => number,
    private readonly keepMs = ENDED_EPOCH_MEMORY_MS,
    private readonly limit = ENDED_EPOCH_LIMIT,
  ) {}

  get size(): number {
    return this.ends.size;
  }

  /** Records that the activation of `key` at `epoch` ended here. */
  end(key: string, epoch: bigint): void {
    const previous = this.ends.get(key);
    this.ends.delete(key);
    // Stryker disable next-line EqualityOperator: an equal epoch keeps the same value either way
    const highest = previous !== undefined && previous.epoch > epoch ? previous.epoch : epoch;
    this.ends.set(key, { epoch: highest, at: this.now() });
    this.forgetOld();
  }

  /** True when an activation of `key` at `epoch` or later ended here recently. */
  ended(key: string, epoch: bigint): boolean {
    const entry = this.ends.get(key);
    return entry !== undefined && epoch <= entry.epoch && this.now() - entry.at < this.keepMs;
  }

  private forgetOld(): void {
    const cutoff = this.now() - this.keepMs;
    for (const [key, entry] of this.ends) {
      if (this.ends.size <= this.limit && entry.at > cutoff) return;
      this.ends.delete(key);
    }
  }
}
