import WebSocket from "ws";

export interface Frame {
  data: Buffer;
  binary: boolean;
}

export interface TestSocket {
  ws: WebSocket;
  /** The next frame, in arrival order. */
  next(): Promise<Frame>;
  /** The next frame, parsed as JSON text. */
  json<T = Record<string, unknown>>(): Promise<T>;
  /** Resolves with the close code and reason the client saw. */
  closed: Promise<{ code: number; reason: string }>;
}

export interface RejectedUpgrade {
  status: number;
  headers: Record<string, string | string[] | undefined>;
  body: string;
}

const toWs = (url: string) => url.replace(/^http/, "ws");

/** Opens a WebSocket (through Pinboard) and resolves once it is open; rejects on any other answer. */
export function openSocket(
  url: string,
  options: { headers?: Record<string, string>; protocols?: string[] } = {},
): Promise<TestSocket> {
  return new Promise((resolve, reject) => {
    const ws = new WebSocket(toWs(url), options.protocols ?? [], { headers: options.headers });
    const frames: Frame[] = [];
    const waiters: ((f: Frame) => void)[] = [];
    ws.on("message", (data, binary) => {
      const frame = { data: data as Buffer, binary };
      const waiter = waiters.shift();
      if (waiter) waiter(frame);
      else frames.push(frame);
    });
    const closed = new Promise<{ code: number; reason: string }>((r) =>
      ws.on("close", (code, reason) => r({ code, reason: reason.toString() })),
    );
    const next = () => (frames.length ? Promise.resolve(frames.shift()!) : new Promise<Frame>((r) => waiters.push(r)));
    ws.on("unexpected-response", (_req, res) => {
      reject(new Error(`upgrade answered ${res.statusCode}`));
      ws.terminate();
    });
    ws.on("error", reject);
    ws.on("open", () =>
      resolve({
        ws,
        next,
        json: async () => JSON.parse((await next()).data.toString("utf8")),
        closed,
      }),
    );
  });
}

/** Sends an upgrade that must not be accepted; resolves with the HTTP answer (status, headers, body). */
export function rejectedUpgrade(
  url: string,
  options: { headers?: Record<string, string> } = {},
): Promise<RejectedUpgrade> {
  return new Promise((resolve, reject) => {
    const ws = new WebSocket(toWs(url), { headers: options.headers });
    ws.on("unexpected-response", (_req, res) => {
      let body = "";
      res.setEncoding("utf8");
      res.on("data", (chunk: string) => (body += chunk));
      res.on("end", () => {
        resolve({ status: res.statusCode ?? 0, headers: res.headers, body });
        ws.terminate();
      });
    });
    ws.on("open", () => {
      reject(new Error("the upgrade was accepted"));
      ws.close();
    });
    ws.on("error", () => {});
  });
}

/** Polls `check` until it returns true (or fails after `timeoutMs`). */
export async function eventually(check: () => boolean | Promise<boolean>, timeoutMs = 5000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error("condition not met in time");
    await new Promise((r) => setTimeout(r, 25));
  }
}
