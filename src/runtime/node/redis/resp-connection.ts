import { connect as connectTcp, type Socket } from "node:net";
import { connect as connectTls } from "node:tls";
import { encodeCommand, ReplyError, RespParser, type RespValue } from "./resp-codec.ts";

export interface RespConnectionOptions {
  /** redis:// or rediss:// URL: user and password for AUTH, /<db> for SELECT. */
  url: string;
  /** How long a command may wait for its reply, queued while disconnected included (ms). */
  timeoutMs: number;
  /** Each failed connection attempt and each lost connection. */
  onError: (err: Error) => void;
  /** The connection is up and authenticated (again). */
  onReady: () => void;
}

type State = "connecting" | "ready" | "waiting" | "closed";

/** One command awaiting its reply, in the order the replies will come. */
class Pending {
  settled = false;
  constructor(
    /** The command as written; dropped once written, so a queue of unanswered commands stays small. */
    public payload: string,
    readonly deadline: number,
    readonly resolve: (reply: RespValue) => void,
    readonly reject: (err: Error) => void,
  ) {}
}

/** ioredis' default back-off between attempts: 50 ms more each time, at most 2 s. */
const retryDelayMs = (attempt: number): number => Math.min(attempt * 50, 2000);

/**
 * One pipelined connection to one Redis server, for the Node entry's RedisPort (tcp.ts).
 * Commands are answered in the order they were written, so a reply is matched by position; the
 * commands of one event-loop turn leave in one write. Measured against ioredis on the forward's
 * path (`npm run bench:ab`): a command costs a string and a promise here, where ioredis builds a
 * Command, its argument list, a timer and its RESP string (docs/performance.md).
 *
 * Failure is prompt and bounded: a lost connection rejects every command in flight ("Connection is
 * closed.") and reconnects with ioredis' back-off; commands sent meanwhile wait for the next
 * attempt and fail with its error if it fails too; no command waits longer than `timeoutMs`
 * ("Command timed out"; its reply, if it comes, is dropped); a server that leaves the oldest
 * command unanswered for twice that is taken for gone and the connection made again. A command is
 * never sent twice.
 */
export class RespConnection {
  private state: State = "connecting";
  private socket: Socket | undefined;
  /** Written, awaiting replies; `head` is the next to be answered. */
  private inFlight: Pending[] = [];
  private head = 0;
  /** Sent while not ready: written once the connection is. */
  private offline: Pending[] = [];
  private outgoing = "";
  private flushQueued = false;
  private attempts = 0;
  private retryTimer: ReturnType<typeof setTimeout> | undefined;
  private readonly sweeper: ReturnType<typeof setInterval>;
  private readonly parser = new RespParser((reply) => this.answer(reply));
  private readonly flush = () => this.writeOut();

  constructor(private readonly options: RespConnectionOptions) {
    // One timer for every command: all share one timeout, so the oldest expire first.
    const tick = Math.min(250, Math.max(5, Math.floor(options.timeoutMs / 10)));
    this.sweeper = setInterval(() => this.expire(Date.now()), tick);
    this.sweeper.unref();
    this.open();
  }

  get ready(): boolean {
    return this.state === "ready";
  }

  /** Sends one command; its reply, or a ReplyError / connection error as the rejection. */
  send(args: readonly (string | number)[]): Promise<RespValue> {
    if (this.state === "closed") return Promise.reject(new Error("Connection is closed."));
    const payload = encodeCommand(args);
    return new Promise<RespValue>((resolve, reject) => {
      const pending = new Pending(payload, Date.now() + this.options.timeoutMs, resolve, reject);
      if (this.state === "ready") this.write(pending);
      else this.offline.push(pending);
    });
  }

  /** Sends QUIT after what was written (which is still answered), then closes; commands not yet written are rejected. */
  async close(): Promise<void> {
    if (this.state === "closed") return;
    const socket = this.state === "ready" ? this.socket : undefined;
    this.state = "closed";
    clearInterval(this.sweeper);
    clearTimeout(this.retryTimer);
    this.failOffline(new Error("Connection is closed."));
    if (socket) {
      const quit = new Promise<void>((resolve) => socket.once("close", () => resolve()));
      this.write(
        new Pending(
          encodeCommand(["QUIT"]),
          Date.now() + this.options.timeoutMs,
          () => {},
          () => {},
        ),
      );
      this.writeOut();
      socket.end();
      const timer = setTimeout(() => socket.destroy(), 1000);
      await quit;
      clearTimeout(timer);
    } else this.socket?.destroy();
  }

  private open(): void {
    const url = new URL(this.options.url);
    const host = url.hostname.replace(/^\[|\]$/g, "") || "127.0.0.1";
    const port = Number(url.port || 6379);
    const socket =
      url.protocol === "rediss:"
        ? connectTls({ host, port, servername: /^[\d.]+$|:/.test(host) ? undefined : host })
        : connectTcp({ host, port });
    this.socket = socket;
    this.state = "connecting";
    socket.setNoDelay(true);
    socket.setKeepAlive(true, 15_000);
    socket.setTimeout(Math.max(this.options.timeoutMs, 10_000), () =>
      socket.destroy(new Error(`connect ETIMEDOUT ${host}:${port}`)),
    );
    let failure: Error | undefined;
    socket.on("error", (err) => (failure = err));
    socket.on("data", (chunk: Buffer) => {
      try {
        this.parser.push(chunk);
      } catch (err) {
        socket.destroy(err as Error);
      }
    });
    socket.on("close", () => this.lost(socket, failure));
    socket.once(url.protocol === "rediss:" ? "secureConnect" : "connect", () => {
      socket.setTimeout(0);
      this.handshake(url).then(
        () => {
          if (this.socket !== socket || this.state !== "connecting") return;
          this.state = "ready";
          this.attempts = 0;
          const queued = this.offline;
          this.offline = [];
          for (const pending of queued) if (!pending.settled) this.write(pending);
          this.options.onReady();
        },
        (err: Error) => socket.destroy(err),
      );
    });
  }

  /** AUTH and SELECT as the URL says, ahead of every other command on a new connection. */
  private handshake(url: URL): Promise<unknown> {
    const steps: Promise<RespValue>[] = [];
    const deadline = Date.now() + this.options.timeoutMs;
    const step = (args: string[]) =>
      steps.push(
        new Promise<RespValue>((resolve, reject) =>
          this.write(new Pending(encodeCommand(args), deadline, resolve, reject)),
        ),
      );
    const password = decodeURIComponent(url.password);
    const user = decodeURIComponent(url.username);
    if (password) step(user ? ["AUTH", user, password] : ["AUTH", password]);
    const db = Number(url.pathname.slice(1) || "0");
    if (Number.isInteger(db) && db > 0) step(["SELECT", String(db)]);
    return Promise.all(steps);
  }

  private write(pending: Pending): void {
    this.inFlight.push(pending);
    this.outgoing += pending.payload;
    pending.payload = "";
    if (!this.flushQueued) {
      this.flushQueued = true;
      // After every I/O callback of this turn: the commands of many requests share one write(2).
      setImmediate(this.flush);
    }
  }

  private writeOut(): void {
    this.flushQueued = false;
    if (this.outgoing === "") return;
    const out = this.outgoing;
    this.outgoing = "";
    if (this.socket && !this.socket.destroyed) this.socket.write(out);
  }

  private answer(reply: RespValue): void {
    const pending = this.inFlight[this.head];
    if (pending === undefined) {
      // A reply nobody asked for: the stream is out of step; start over on a new connection.
      this.socket?.destroy(new Error("Redis sent a reply to no command"));
      return;
    }
    this.inFlight[this.head++] = undefined as never;
    if (this.head === this.inFlight.length) {
      this.inFlight.length = 0;
      this.head = 0;
    } else if (this.head >= 1024 && this.head * 2 >= this.inFlight.length) {
      this.inFlight = this.inFlight.slice(this.head);
      this.head = 0;
    }
    if (pending.settled) return;
    pending.settled = true;
    if (reply instanceof ReplyError) pending.reject(reply);
    else pending.resolve(reply);
  }

  /**
   * Rejects the commands whose time is up; their replies, when they come, are dropped. A server
   * that has not answered the oldest command for twice the timeout is taken for gone (stopped,
   * or cut off without a reset): the connection is dropped and made again, so unanswered
   * commands do not pile up behind it.
   */
  private expire(now: number): void {
    const oldest = this.inFlight[this.head];
    if (oldest !== undefined && now - oldest.deadline >= this.options.timeoutMs) {
      this.socket?.destroy(new Error(`no reply from Redis in ${2 * this.options.timeoutMs} ms`));
    }
    for (const queue of [this.inFlight, this.offline]) {
      for (let i = queue === this.inFlight ? this.head : 0; i < queue.length; i++) {
        const pending = queue[i]!;
        if (pending.deadline > now) break;
        if (pending.settled) continue;
        pending.settled = true;
        pending.reject(new Error("Command timed out"));
      }
    }
    if (this.offline.length > 0 && this.offline.every((p) => p.settled)) this.offline = [];
  }

  private lost(socket: Socket, failure: Error | undefined): void {
    if (this.socket !== socket) return;
    const wasReady = this.state === "ready";
    this.socket = undefined;
    this.parser.reset();
    this.outgoing = "";
    const inFlight = this.inFlight.slice(this.head);
    this.inFlight = [];
    this.head = 0;
    const closed = new Error(
      failure && !wasReady
        ? failure.message || (failure as NodeJS.ErrnoException).code || String(failure)
        : "Connection is closed.",
    );
    if (failure) Object.assign(closed, { code: (failure as NodeJS.ErrnoException).code, cause: failure });
    for (const pending of inFlight) {
      if (pending.settled) continue;
      pending.settled = true;
      pending.reject(closed);
    }
    if (this.state === "closed") return;
    // A failed attempt fails what waited for it; a connection that was up just went down.
    if (!wasReady) this.failOffline(closed);
    this.options.onError(failure ?? closed);
    this.state = "waiting";
    this.retryTimer = setTimeout(() => this.open(), retryDelayMs(++this.attempts));
  }

  private failOffline(err: Error): void {
    const queued = this.offline;
    this.offline = [];
    for (const pending of queued) {
      if (pending.settled) continue;
      pending.settled = true;
      pending.reject(err);
    }
  }
}
