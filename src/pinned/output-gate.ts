/**
 * The output gate of one activation, Durable Objects' rule: an answer or a WebSocket message
 * that follows a storage write leaves only once that write is durable (the store acknowledged
 * it). A write that fails breaks the activation: every answer still waiting fails, and the
 * activation is dropped (`onBroken`) so the next request activates afresh from storage, never
 * from memory the store does not hold.
 */
export class OutputGate {
  private readonly pending = new Set<Promise<unknown>>();
  private failure: { error: unknown } | null = null;

  constructor(
    private readonly onBroken: (error: unknown) => void,
    /** false (allowUnconfirmed): answers leave at once; a failed write still drops the activation. */
    private readonly holdsOutput = true,
  ) {}

  /** Why the activation broke, if a write failed. */
  get broken(): { error: unknown } | null {
    return this.failure;
  }

  get writesInFlight(): number {
    return this.pending.size;
  }

  /** Follows a write: its failure breaks the activation. Returns the write, its rejection handled. */
  track<T>(write: Promise<T>): Promise<T> {
    this.pending.add(write);
    write.then(
      () => this.pending.delete(write),
      (error: unknown) => {
        this.pending.delete(write);
        if (this.failure) return;
        this.failure = { error };
        this.onBroken(error);
      },
    );
    return write;
  }

  /**
   * Resolves once every write made so far is durable, or at once without one in flight; rejects
   * with the failure once the activation is broken. Null when nothing needs waiting for.
   */
  confirmed(): Promise<void> | null {
    if (this.failure) return Promise.reject(this.failure.error);
    if (this.pending.size === 0 || !this.holdsOutput) return null;
    return Promise.allSettled([...this.pending]).then(() => {
      if (this.failure) throw this.failure.error;
    });
  }
}
