import { randomBytes } from "node:crypto";
import WebSocket from "ws";

/**
 * The payload of Pinboard's own pings. A pong that carries it answers Pinboard and goes no
 * further; a peer's own pings and pongs are still relayed end to end (ws-pipe.ts).
 */
const KEEPALIVE = Buffer.from(`pinboard-keepalive-${randomBytes(6).toString("hex")}`);

export function isKeepAlivePong(data: Buffer): boolean {
  return data.equals(KEEPALIVE);
}

interface Watch {
  /** Heard from since the last ping: a pong, or its send queue shrank (it reads). */
  alive: boolean;
  buffered: number;
}

/**
 * Finds dead peers on proxied sockets, one interval timer for all of them: every tick each open
 * socket that answered since the previous tick is pinged again, and one that did not is
 * terminated; its close then ends the pipe like any close and the slot is given back. A peer that
 * stops reading (a stopped process, a client that never reads) is cut within two intervals.
 *
 * A socket is also alive while its send queue shrinks, so a slow reader behind a large queue (the
 * ping waits behind it) is not cut; and a socket the pipe has paused is left alone, since its
 * pongs sit unread in its own buffer by Pinboard's doing.
 */
export class KeepAlive {
  private readonly watched = new Map<WebSocket, Watch>();
  private timer: ReturnType<typeof setInterval> | undefined;
  private lastTick = 0;

  constructor(private readonly intervalMs: number) {}

  watch(ws: WebSocket): void {
    const watch: Watch = { alive: true, buffered: ws.bufferedAmount };
    this.watched.set(ws, watch);
    ws.on("pong", () => (watch.alive = true));
    ws.once("close", () => this.watched.delete(ws));
    if (this.timer) return;
    this.lastTick = performance.now();
    this.timer = setInterval(() => this.tick(), this.intervalMs);
    // The sockets keep the process alive on their own.
    this.timer.unref?.();
  }

  stop(): void {
    clearInterval(this.timer);
    this.timer = undefined;
    this.watched.clear();
  }

  private tick(): void {
    if (this.watched.size === 0) {
      clearInterval(this.timer);
      this.timer = undefined;
      return;
    }
    // A tick this late means this process was stalled: timers run before pending reads, so the
    // pongs that came meanwhile are not read yet. Judge no one this time.
    const now = performance.now();
    const late = now - this.lastTick > this.intervalMs * 1.5;
    this.lastTick = now;
    if (late) return;
    for (const [ws, watch] of this.watched) {
      // A closing socket is ws' business: its close timeout cuts a peer that never answers.
      if (ws.readyState !== WebSocket.OPEN) continue;
      const buffered = ws.bufferedAmount;
      const progressed = buffered < watch.buffered;
      watch.buffered = buffered;
      if (ws.isPaused) {
        watch.alive = true;
        continue;
      }
      if (!watch.alive && !progressed) {
        this.watched.delete(ws);
        ws.terminate();
        continue;
      }
      watch.alive = false;
      ws.ping(KEEPALIVE);
    }
  }
}
