import type { Writable } from "node:stream";

/**
 * Coalesces the commands one event-loop turn writes to a Redis connection into one write. Under
 * load the poll phase of a turn reads many client requests, each of which sends its resolve
 * script right away; written one by one, every command is a system call of its own, and on
 * loopback each one also runs Redis' side of TCP. Corked at the turn's first command and
 * uncorked in the turn's check phase (setImmediate), they leave together as one writev, and Redis
 * reads and answers them in one pass. Each command is still its own command with its own reply:
 * nothing changes about what is sent or how a failure is reported, only how many writes carry it.
 */
export class TurnCork {
  private corked: Writable | undefined;
  private readonly release = (): void => {
    const socket = this.corked;
    this.corked = undefined;
    socket?.uncork();
  };

  /** Holds `socket`'s writes until the end of this turn's poll phase (once per turn). */
  hold(socket: Writable | undefined): void {
    if (this.corked !== undefined || socket === undefined || socket.destroyed) return;
    this.corked = socket;
    socket.cork();
    setImmediate(this.release);
  }
}
