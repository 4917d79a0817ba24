/**
 * What the WebSocket sessions of a chaos run record (socket-workload.ts), and what
 * check-sockets.ts judges. A session is one client's run of sockets to one key: when it sees its
 * socket close (or an echo not come in time) it opens another, through either Pinboard node.
 */

/** One message a client sent, as the client saw it. */
export interface SocketMessage {
  /** Unique per run: `${session}:${n}`. */
  msg: string;
  session: number;
  /** Which socket of the session carried it (0, 1, …). */
  socket: number;
  key: string;
  node: number;
  sent: number;
  /** When its echo arrived; absent when none did (the socket closed or timed out first). */
  answered?: number;
  /** The echo's epoch and worker (the instance echoes ctx.epoch and its CLIENT_ID). */
  epoch?: string;
  worker?: string;
  /** Echoes after the first: a message must be answered at most once. */
  extraAnswers?: number;
}

/** A socket of a session opened (the instance's hello came), refused, or seen to close. */
export interface SocketEvent {
  session: number;
  socket: number;
  key: string;
  node: number;
  kind: "open" | "refused" | "closed";
  at: number;
  /** open: the hello's epoch and worker. */
  epoch?: string;
  worker?: string;
  /** closed: the close code (1006 when the client gave up on it), refused: why. */
  code?: number;
  detail?: string;
}

/** The instance's own log line (written synchronously before its echo): a message it took. */
export interface SocketTaken {
  worker: string;
  key: string;
  epoch: string;
  msg: string;
  at: number;
}

export interface SocketHistory {
  messages: SocketMessage[];
  events: SocketEvent[];
  taken: SocketTaken[];
}
