/**
 * Two live processes registered with one clientId replace each other: Pinboard keeps one session
 * per clientId, so each register drops the other's record, whose next heartbeat gets 409 unknown
 * session and re-registers, dropping the first one's, every heartbeat interval for good, while
 * clients still get answers. Pinboard's answers do not say "replaced" (the contract has no such
 * field), so the worker tells it from its own lease:
 *
 *  - a session lost while the worker's lease was still valid by its own clock was not lost to
 *    expiry: another register of this clientId replaced it, or Pinboard's Redis lost its data;
 *  - Redis losing its data happens once: the worker re-registers at once and heartbeats fine;
 *  - a replacement repeats: the session of that very re-register is lost the same way before a
 *    single heartbeat of it succeeded. Then the worker says so once per loss and re-registers
 *    only after a backoff (a heartbeat interval, doubling up to four leases), so the two stop
 *    replacing each other every few seconds; the other process keeps the clientId meanwhile.
 *
 * A session lost after the lease ran out (the process was paused, or cut off from Pinboard,
 * past its lease) is expiry: re-registered at once, with no word of another process.
 */
export class ClientIdClash {
  /** Sessions lost while their lease held, since the last heartbeat that succeeded. */
  private streak = 0;

  constructor(private readonly clientId: string) {}

  /** A heartbeat was answered 200: whatever was lost before is settled. */
  renewed(): void {
    this.streak = 0;
  }

  /**
   * The heartbeat of a session was answered 409 unknown session; `leaseHeld`: the lease was
   * still valid when the answer came. Returns how long to wait before re-registering (0: at
   * once), and when it is not 0, the line that says why.
   */
  lost(leaseHeld: boolean, intervalMs: number, leaseMs: number): { delayMs: number; message?: string } {
    if (!leaseHeld) {
      this.streak = 0;
      return { delayMs: 0 };
    }
    this.streak++;
    if (this.streak < 2) return { delayMs: 0 };
    const delayMs = Math.min(4 * leaseMs, intervalMs * 2 ** Math.min(this.streak - 2, 20));
    return { delayMs, message: clientIdHeldMessage(this.clientId) };
  }
}

/** The line a worker whose clientId another live process holds logs before it backs off. */
export function clientIdHeldMessage(clientId: string): string {
  return (
    `clientId ${JSON.stringify(clientId)} is held by another live process (its registration replaced this one): ` +
    "give each process its own clientId (the clientId option or CLIENT_ID)"
  );
}
