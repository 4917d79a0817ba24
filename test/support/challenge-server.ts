import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";

export type ChallengeMode = "answer" | "mismatch" | "timeout" | "error500" | "redirect" | "empty" | "huge" | "not-json";

export interface ChallengeServer {
  url: string;
  /** The secret the server expects in Pinboard-Proxy-Secret. */
  secret: string;
  mode: ChallengeMode;
  /** Where "redirect" points (a server that would answer correctly). */
  redirectTo?: string;
  /** challenge → value this worker answers with. */
  readonly challenges: Map<string, string>;
  /** How POST …/_wake and …/_alarm are answered; unset, they are 404 like any other path. */
  instanceCalls?: { status: number; body: unknown; headers?: Record<string, string> };
  /** Every request seen: method, path and headers. */
  readonly seen: Array<{ method: string; url: string; headers: IncomingMessage["headers"] }>;
  close(): Promise<void>;
}

/**
 * A real HTTP worker on loopback that serves GET /_pinned/challenge the way the worker contract
 * says, with switchable misbehaviour for probe tests. Registry tests use it where they need a
 * worker that only proves its URL; data-plane tests use the worker library.
 */
export async function startChallengeServer(secret = "worker-secret-0123456789"): Promise<ChallengeServer> {
  const state: ChallengeServer = {
    url: "",
    secret,
    mode: "answer",
    challenges: new Map(),
    seen: [],
    close: async () => {},
  };
  const server: Server = createServer((req, res) => handle(state, req, res));
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as AddressInfo;
  state.url = `http://127.0.0.1:${port}`;
  state.close = () =>
    new Promise<void>((resolve) => {
      server.closeAllConnections();
      server.close(() => resolve());
    });
  return state;
}

function handle(state: ChallengeServer, req: IncomingMessage, res: ServerResponse): void {
  state.seen.push({ method: req.method ?? "", url: req.url ?? "", headers: req.headers });
  const url = new URL(req.url ?? "/", "http://x");
  if (state.instanceCalls && req.method === "POST" && /\/_(wake|alarm)$/.test(url.pathname)) {
    json(res, state.instanceCalls.status, state.instanceCalls.body, state.instanceCalls.headers);
    return;
  }
  if (url.pathname !== "/_pinned/challenge") {
    json(res, 404, { detail: "not found" });
    return;
  }
  switch (state.mode) {
    case "timeout":
      return; // never answers
    case "error500":
      json(res, 500, { detail: "boom" });
      return;
    case "redirect":
      res.writeHead(302, { location: `${state.redirectTo ?? state.url}${req.url}` }).end();
      return;
    case "empty":
      res.writeHead(200, { "content-type": "application/json" }).end();
      return;
    case "huge":
      res.writeHead(200, { "content-type": "application/json" });
      res.end(`{"value":"${"x".repeat(1024 * 1024 + 10)}"}`);
      return;
    case "not-json":
      res.writeHead(200, { "content-type": "text/plain" }).end("hello");
      return;
  }
  const value = state.challenges.get(url.searchParams.get("challenge") ?? "");
  if (req.headers["pinboard-proxy-secret"] !== state.secret) json(res, 403, { detail: "invalid proxy secret" });
  else if (value === undefined) json(res, 404, { detail: "unknown challenge" });
  else json(res, 200, { value: state.mode === "mismatch" ? `${value}-other` : value });
}

function json(res: ServerResponse, status: number, body: unknown, headers: Record<string, string> = {}): void {
  res.writeHead(status, { ...headers, "content-type": "application/json" }).end(JSON.stringify(body));
}
