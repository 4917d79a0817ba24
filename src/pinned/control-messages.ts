/** A control message as a heartbeat delivers it. */
export interface ControlMessage {
  msgId: string | number;
  type: string;
  ns: string;
  id: string;
  /** Seconds from delivery; null revokes. */
  deadline: number | null;
}

const SEEN_TTL_MS = 10 * 60_000;

/**
 * Pinboard re-delivers a message on every heartbeat until an ack names it. The ledger hands each
 * message to the worker once, and keeps its msgId in the acks of every heartbeat until one of
 * them succeeded. Message ids belong to a session: a new registration starts a new ledger.
 */
export class MessageLedger {
  private readonly pending = new Map<string, string | number>();
  private readonly seen = new Map<string, number>();

  /** The msgIds to send with the next heartbeat. */
  acks(): (string | number)[] {
    return [...this.pending.values()];
  }

  /** A heartbeat carrying `acks` succeeded. */
  acked(acks: (string | number)[]): void {
    for (const ack of acks) this.pending.delete(String(ack));
  }

  /** The delivered messages not handled before; all of them are queued for acking. */
  receive(delivered: unknown, nowMs: number): ControlMessage[] {
    const fresh: ControlMessage[] = [];
    // Stryker disable next-line ArrayDeclaration: a non-array delivery read as any list of strings holds no message either
    for (const message of Array.isArray(delivered) ? delivered : []) {
      if (!isMessage(message)) continue;
      const key = String(message.msgId);
      this.pending.set(key, message.msgId);
      if (this.seen.has(key)) continue;
      this.seen.set(key, nowMs);
      fresh.push(message);
    }
    for (const [key, at] of this.seen) {
      if (nowMs - at > SEEN_TTL_MS && !this.pending.has(key)) this.seen.delete(key);
    }
    return fresh;
  }

  clear(): void {
    this.pending.clear();
    this.seen.clear();
  }
}

function isMessage(value: unknown): value is ControlMessage {
  const v = value as Partial<ControlMessage> | null;
  return (
    // Stryker disable next-line ConditionalExpression: a primitive has no string ns, so the checks below refuse it anyway
    typeof v === "object" &&
    v !== null &&
    typeof v.ns === "string" &&
    typeof v.id === "string" &&
    (typeof v.msgId === "string" || typeof v.msgId === "number") &&
    typeof v.type === "string" &&
    (v.deadline === null || typeof v.deadline === "number")
  );
}
