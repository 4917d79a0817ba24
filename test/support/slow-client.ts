import { connect, type Socket } from "node:net";

/**
 * Raw TCP clients for the listener limits of the Node entry (headers timeout, request timeout,
 * connection cap): what a slow or greedy client does, byte by byte, and what it got back.
 */

export interface Cut {
  /** Every byte the server sent, as latin1. */
  received: string;
  /** From the first byte written to the server closing the connection; Infinity when it never did. */
  elapsedMs: number;
}

/**
 * Writes `first`, then `drip` every `everyMs` for as long as the server keeps the connection
 * (at most `giveUpMs`), the way a slowloris client keeps a request from ever completing.
 */
export function dribble(port: number, first: string, drip: string, everyMs: number, giveUpMs = 8000): Promise<Cut> {
  return new Promise((resolve) => {
    const socket = connect(port, "127.0.0.1");
    let received = "";
    let started = 0;
    let timer: ReturnType<typeof setInterval> | undefined;
    const giveUp = setTimeout(() => finish(Infinity), giveUpMs);
    const finish = (elapsedMs: number) => {
      clearInterval(timer);
      clearTimeout(giveUp);
      socket.destroy();
      resolve({ received, elapsedMs });
    };
    socket.on("connect", () => {
      started = Date.now();
      socket.write(first);
      timer = setInterval(() => socket.writable && socket.write(drip), everyMs);
    });
    socket.on("data", (d: Buffer) => (received += d.toString("latin1")));
    socket.on("error", () => {});
    socket.on("close", () => finish(Date.now() - started));
  });
}

/** The status and body of a raw HTTP/1.1 answer (a Content-Length body, as Pinboard's own answers have). */
export function parseAnswer(raw: string): { status: number; body: string } {
  const split = raw.indexOf("\r\n\r\n");
  const status = Number(/^HTTP\/1\.1 (\d{3}) /.exec(raw)?.[1] ?? 0);
  return { status, body: split < 0 ? "" : raw.slice(split + 4) };
}

/** A kept-alive connection on which requests are written one at a time, raw. */
export interface Conversation {
  socket: Socket;
  /** Writes `request` and resolves with everything received until `done` says the answer is whole. */
  send(request: string, done?: (received: string) => boolean): Promise<string>;
  /** Resolves once the server has closed the connection. */
  closed: Promise<void>;
}

/** Until the body of a Content-Length answer is complete. */
export const wholeAnswer = (received: string): boolean => {
  const split = received.indexOf("\r\n\r\n");
  if (split < 0) return false;
  const length = Number(/\r\ncontent-length: (\d+)/i.exec(received.slice(0, split))?.[1] ?? 0);
  return Buffer.byteLength(received.slice(split + 4), "latin1") >= length;
};

export function converse(port: number): Promise<Conversation> {
  return new Promise((resolve, reject) => {
    const socket = connect(port, "127.0.0.1");
    let buffer = "";
    let waiting: (() => void) | undefined;
    socket.on("data", (d: Buffer) => {
      buffer += d.toString("latin1");
      waiting?.();
    });
    const closed = new Promise<void>((done) => socket.on("close", () => done()));
    socket.on("error", () => {});
    socket.once("connect", () =>
      resolve({
        socket,
        closed,
        send(request, done = wholeAnswer) {
          buffer = "";
          socket.write(request);
          return new Promise((answered, failed) => {
            const timer = setTimeout(
              () =>
                failed(
                  new Error(
                    `no whole answer to ${JSON.stringify(request.split("\r\n")[0])}: ${JSON.stringify(buffer)}`,
                  ),
                ),
              5000,
            );
            const check = () => {
              if (!done(buffer)) return;
              clearTimeout(timer);
              waiting = undefined;
              answered(buffer);
            };
            waiting = check;
            closed.then(() => check());
            check();
          });
        },
      }),
    );
    socket.once("error", reject);
  });
}

/**
 * Opens a connection and waits: true when the server closes it without sending a byte within
 * `withinMs` (a connection refused past the cap), false when it stays open or gets an answer.
 */
export function closedUnanswered(port: number, withinMs = 2000): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = connect(port, "127.0.0.1");
    let received = 0;
    const timer = setTimeout(() => {
      socket.destroy();
      resolve(false);
    }, withinMs);
    socket.on("data", (d: Buffer) => (received += d.length));
    socket.on("error", () => {});
    socket.on("close", () => {
      clearTimeout(timer);
      resolve(received === 0);
    });
  });
}
