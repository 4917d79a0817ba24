import WebSocket from "ws";
import type { SocketEvent, SocketHistory, SocketMessage } from "./history-sockets.ts";

/**
 * The WebSocket clients of the campaign: `sessions` loops, each holding one session on one
 * `/sockets/s…` key (two or more sessions per key, so one sees what the other's takeover did).
 * A session opens a socket through a random Pinboard node, waits for the instance's hello, then
 * sends numbered messages one at a time, each awaited for ECHO_TIMEOUT_MS. When its socket
 * closes, an echo does not come, or it has sent its share on that socket, it drops the socket
 * and opens another, through either node. Everything is recorded (history-sockets.ts).
 */

export interface SocketWorkloadOptions {
  nodes: string[];
  sessions: number;
  keys: number;
  random: () => number;
}

// Short, so that a session whose owner stopped opens a new socket soon, and lands on the new owner
// once Pinboard's lease ran out: its other sessions' messages then wait in the old owner's socket.
const HELLO_TIMEOUT_MS = 1000;
const ECHO_TIMEOUT_MS = 800;
const HANDSHAKE_TIMEOUT_MS = 1000;
const SEND_EVERY_MS = 50;

interface OpenSocket {
  ws: WebSocket;
  /** Settles once the socket closed (or errored): its code, 1006 when none came. */
  closed: Promise<number>;
}

export class SocketWorkload {
  readonly history: SocketHistory = { messages: [], events: [], taken: [] };

  constructor(private readonly options: SocketWorkloadOptions) {}

  keys(): string[] {
    return Array.from({ length: this.options.keys }, (_, i) => `/sockets/s${i}`);
  }

  async run(deadline: number): Promise<void> {
    await Promise.all(Array.from({ length: this.options.sessions }, (_, i) => this.session(i, deadline)));
  }

  private async session(session: number, deadline: number): Promise<void> {
    const key = this.keys()[session % this.options.keys]!;
    let n = 0;
    for (let socket = 0; Date.now() < deadline; socket++) {
      const node = Math.floor(this.options.random() * this.options.nodes.length);
      const event = (kind: SocketEvent["kind"], extra: Partial<SocketEvent> = {}) =>
        this.history.events.push({ session, socket, key, node, kind, at: Date.now(), ...extra });
      const answers = new Map<string, SocketMessage>();
      const waiting = new Map<string, () => void>();
      const open = await this.open(`${this.options.nodes[node]}${key}`, answers, waiting, event);
      if (!open) {
        await sleep(200);
        continue;
      }
      const share = 10 + Math.floor(this.options.random() * 40);
      let closedCode: number | undefined;
      void open.closed.then((code) => {
        closedCode = code;
        for (const wake of waiting.values()) wake();
      });
      for (let i = 0; i < share && Date.now() < deadline && closedCode === undefined; i++) {
        const message: SocketMessage = { msg: `${session}:${n++}`, session, socket, key, node, sent: Date.now() };
        this.history.messages.push(message);
        answers.set(message.msg, message);
        const answered = new Promise<void>((resolve) => waiting.set(message.msg, resolve));
        open.ws.send(JSON.stringify({ msg: message.msg }));
        await Promise.race([answered, sleep(ECHO_TIMEOUT_MS)]);
        waiting.delete(message.msg);
        if (message.answered === undefined) break;
        await sleep(SEND_EVERY_MS);
      }
      if (closedCode !== undefined) event("closed", { code: closedCode });
      open.ws.terminate();
    }
  }

  /** Opens a socket and waits for the hello; undefined (recorded as refused) when either fails. */
  private async open(
    url: string,
    answers: Map<string, SocketMessage>,
    waiting: Map<string, () => void>,
    event: (kind: SocketEvent["kind"], extra?: Partial<SocketEvent>) => void,
  ): Promise<OpenSocket | undefined> {
    const ws = new WebSocket(url.replace(/^http/, "ws"), {
      headers: { "x-forwarded-for": this.clientAddress() },
      handshakeTimeout: HANDSHAKE_TIMEOUT_MS,
    });
    let hello: (h: { epoch: string; worker: string }) => void = () => {};
    const helloCame = new Promise<{ epoch: string; worker: string }>((resolve) => (hello = resolve));
    let refusal = "";
    ws.on("unexpected-response", (_req, res) => {
      refusal = `${res.statusCode}`;
      res.resume();
      ws.terminate();
    });
    ws.on("error", (err) => (refusal ||= err.message));
    const closed = new Promise<number>((resolve) => ws.on("close", (code) => resolve(code)));
    ws.on("message", (data) => {
      const body = JSON.parse(String(data)) as { hello?: true; msg?: string; epoch: string; worker: string };
      if (body.hello) return hello(body);
      const message = body.msg === undefined ? undefined : answers.get(body.msg);
      if (!message) return;
      if (message.answered !== undefined) {
        message.extraAnswers = (message.extraAnswers ?? 0) + 1;
        return;
      }
      Object.assign(message, { answered: Date.now(), epoch: body.epoch, worker: body.worker });
      waiting.get(message.msg)?.();
    });
    const first = await Promise.race([helloCame, closed, sleep(HELLO_TIMEOUT_MS).then(() => "timeout" as const)]);
    if (typeof first === "object") {
      event("open", { epoch: first.epoch, worker: first.worker });
      return { ws, closed };
    }
    ws.terminate();
    event("refused", { detail: refusal || (first === "timeout" ? "no hello" : `closed ${first}`) });
    return undefined;
  }

  /** A client address of its own per socket (the affinity key), as workload.ts does per request. */
  private clientAddress(): string {
    const octet = () => 1 + Math.floor(this.options.random() * 254);
    return `10.${octet()}.${octet()}.${octet()}`;
  }
}

function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}
