import { randomBytes } from "node:crypto";
import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import { afterAll } from "vitest";
import { verifyAttestation } from "../../src/contract/attestation.ts";
import { useForFile } from "./use-for-file.ts";

/**
 * How a scripted worker answers GET /_pinned/stats:
 *   { status, body }     that status and that raw body text (JSON or not)
 *   { hang: true }       never answers (the request stays open until Pinboard gives up)
 *   { delayMs, answer }  `answer`, after delayMs
 *   { redirect: url }    302 to url (Pinboard never follows redirects)
 * A request whose Pinboard-Attestation does not verify (HS256 with the worker's secret, aud one
 * of the sessions it registered) is answered 403 {"detail":"invalid attestation"}, whatever the
 * script says, as the worker contract's workers do.
 */
export type StatsAnswer =
  | { status: number; body: string }
  | { hang: true }
  | { delayMs: number; answer: StatsAnswer }
  | { redirect: string };

/** Counts the /_pinned/stats requests open at once, across every worker that shares it. */
export class InflightTracker {
  inflight = 0;
  max = 0;
  total = 0;
  enter(): void {
    this.inflight++;
    this.total++;
    this.max = Math.max(this.max, this.inflight);
  }
  leave(): void {
    this.inflight--;
  }
}

export interface ScriptedWorker {
  url: string;
  secret: string;
  /** Sessions this worker registered: the audiences it accepts. */
  readonly sessions: Set<string>;
  /** What GET /_pinned/stats answers; change it at will. */
  stats: StatsAnswer;
  /** How a forwarded request (any other path) is answered: 200 JSON, or the in-band activation refusal. */
  forward: "ok" | "refuse";
  /** Every /_pinned/stats request: its attestation's audience when it verified, else null. */
  readonly statsCalls: Array<{ aud: string | null }>;
  /** Every forwarded request's method and path. */
  readonly forwards: Array<{ method: string; url: string; host: string | undefined }>;
  /** A register body for this worker with a fresh challenge it will answer. */
  registerBody(overrides?: Record<string, unknown>): Record<string, unknown>;
  /** A heartbeat body for one of its sessions, with a fresh challenge it will answer. */
  heartbeatBody(sessionId: string, overrides?: Record<string, unknown>): Record<string, unknown>;
  /** Registers through `call` (an in-process Pinboard's call, or fetch against a process); the session id. */
  register(call: RegistryCall, token: string, overrides?: Record<string, unknown>): Promise<string>;
  close(): Promise<void>;
}

export type RegistryCall = (path: string, token: string, body: unknown) => Promise<Response>;

let counter = 0;

/**
 * A plain node:http worker on loopback that speaks just enough of the worker contract for the
 * operator routes: it answers the registration probe (GET /_pinned/challenge with the proxy
 * secret), GET /_pinned/stats as scripted (attested), and forwards with 200 JSON or the
 * in-band refusal (503 + Retry-After: 1 + Pinned-Refusal: lease-unhealthy).
 */
export async function startScriptedWorker(
  options: { stats?: StatsAnswer; tracker?: InflightTracker } = {},
): Promise<ScriptedWorker> {
  const secret = randomBytes(16).toString("hex");
  const challenges = new Map<string, string>();
  const sessions = new Set<string>();
  const statsCalls: ScriptedWorker["statsCalls"] = [];
  const forwards: ScriptedWorker["forwards"] = [];
  const tracker = options.tracker;

  const state = {
    stats: options.stats ?? ({ status: 200, body: "{}" } as StatsAnswer),
    forward: "ok" as "ok" | "refuse",
  };

  const answer = (res: ServerResponse, script: StatsAnswer): void => {
    if ("hang" in script) return;
    if ("delayMs" in script) {
      const timer = setTimeout(() => answer(res, script.answer), script.delayMs);
      res.once("close", () => clearTimeout(timer));
      return;
    }
    if ("redirect" in script) {
      res.writeHead(302, { location: script.redirect }).end();
      return;
    }
    res.writeHead(script.status, { "content-type": "application/json" }).end(script.body);
  };

  const server: Server = createServer((req: IncomingMessage, res: ServerResponse) => {
    const url = new URL(req.url ?? "/", "http://worker");
    if (url.pathname === "/_pinned/challenge") {
      const value = challenges.get(url.searchParams.get("challenge") ?? "");
      if (req.headers["pinboard-proxy-secret"] !== secret) return json(res, 403, { detail: "invalid proxy secret" });
      if (value === undefined) return json(res, 404, { detail: "unknown challenge" });
      return json(res, 200, { value });
    }
    if (url.pathname === "/_pinned/stats") {
      if (tracker) {
        // Out of flight once the answer is written (before Pinboard can read it and start another
        // call), or once the request is gone unanswered.
        tracker.enter();
        let left = false;
        const leave = () => {
          if (left) return;
          left = true;
          tracker.leave();
        };
        const end = res.end.bind(res) as (...args: unknown[]) => ServerResponse;
        res.end = ((...args: unknown[]) => {
          leave();
          return end(...args);
        }) as ServerResponse["end"];
        res.once("close", leave);
      }
      void attestedAudience(req.headers["pinboard-attestation"], secret, sessions).then((aud) => {
        statsCalls.push({ aud });
        if (aud === null) return json(res, 403, { detail: "invalid attestation" });
        answer(res, state.stats);
      });
      return;
    }
    forwards.push({ method: req.method ?? "", url: req.url ?? "", host: req.headers.host });
    req.resume();
    req.once("end", () => {
      if (state.forward === "refuse") {
        res.writeHead(503, {
          "content-type": "application/json",
          "retry-after": "1",
          "pinned-refusal": "lease-unhealthy",
        });
        res.end(JSON.stringify({ detail: "lease unhealthy" }));
        return;
      }
      json(res, 200, { served: req.url });
    });
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;

  const worker: ScriptedWorker = {
    url,
    secret,
    sessions,
    get stats() {
      return state.stats;
    },
    set stats(value: StatsAnswer) {
      state.stats = value;
    },
    get forward() {
      return state.forward;
    },
    set forward(value: "ok" | "refuse") {
      state.forward = value;
    },
    statsCalls,
    forwards,
    registerBody(overrides = {}) {
      const n = ++counter;
      const challenge = `sc-${n}-${randomBytes(4).toString("hex")}`;
      challenges.set(challenge, `sv-${n}`);
      return {
        clientId: `scripted-${n}-${randomBytes(4).toString("hex")}`,
        secret,
        namespaces: ["/stats"],
        advertiseUrl: url,
        headroom: 100,
        draining: false,
        challenge,
        challengeValue: `sv-${n}`,
        ...overrides,
      };
    },
    heartbeatBody(sessionId, overrides = {}) {
      const n = ++counter;
      const challenge = `sh-${n}-${randomBytes(4).toString("hex")}`;
      challenges.set(challenge, `shv-${n}`);
      return { sessionId, headroom: 50, draining: false, challenge, challengeValue: `shv-${n}`, ...overrides };
    },
    async register(call, token, overrides = {}) {
      const res = await call("/registry/register", token, worker.registerBody(overrides));
      const body = (await res.json()) as { sessionId?: string };
      if (res.status !== 200 || !body.sessionId)
        throw new Error(`register answered ${res.status}: ${JSON.stringify(body)}`);
      sessions.add(body.sessionId);
      return body.sessionId;
    },
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
  return worker;
}

/** The verified audience of an attestation (one of `sessions`, signed with `secret`), or null. */
async function attestedAudience(
  token: string | string[] | undefined,
  secret: string,
  sessions: Set<string>,
): Promise<string | null> {
  if (typeof token !== "string") return null;
  let aud: unknown;
  try {
    aud = (JSON.parse(Buffer.from(token.split(".")[1] ?? "", "base64url").toString("utf8")) as { aud?: unknown }).aud;
  } catch {
    return null;
  }
  if (typeof aud !== "string" || !sessions.has(aud)) return null;
  return (await verifyAttestation(token, secret, aud)) ? aud : null;
}

function json(res: ServerResponse, status: number, body: unknown): void {
  res.writeHead(status, { "content-type": "application/json" }).end(JSON.stringify(body));
}

/** A scripted worker for the whole test file: started before its tests, `ready` hands it over; closed after them. */
export function useScriptedWorker(ready: (worker: ScriptedWorker) => void): void {
  useForFile(
    () => startScriptedWorker(),
    (w) => w.close(),
    ready,
  );
}

/**
 * Starts scripted workers on demand (startScriptedWorker's options) for the test file; every one
 * started so far is closed after the file. Answers the start function.
 */
export function useScriptedWorkers(): (options?: Parameters<typeof startScriptedWorker>[0]) => Promise<ScriptedWorker> {
  const started: ScriptedWorker[] = [];
  afterAll(async () => {
    await Promise.all(started.map((w) => w.close()));
  });
  return async (options) => {
    const worker = await startScriptedWorker(options);
    started.push(worker);
    return worker;
  };
}

/** A RegistryCall for an in-process Pinboard (test/support/pinboard-app.ts). */
export const viaApp =
  (pb: {
    call(method: string, path: string, options?: { body?: unknown; token?: string }): Promise<Response>;
  }): RegistryCall =>
  (path, token, body) =>
    pb.call("POST", path, { token, body });

/** A RegistryCall for a Pinboard at a URL (a process). */
export const viaUrl =
  (base: string): RegistryCall =>
  (path, token, body) =>
    fetch(`${base}${path}`, {
      method: "POST",
      headers: { authorization: `Bearer ${token}`, "content-type": "application/json" },
      body: JSON.stringify(body),
    });
