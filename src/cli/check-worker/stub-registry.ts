import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import { heartbeatReply, registerReply } from "../../registry/replies.ts";
import { deregisterBody, heartbeatBody, registerBody, releaseBody, tagBody } from "../../registry/schemas.ts";
import { newSessionId } from "../../registry/session-ids.ts";
import { type ProbeResult, probeChallenge } from "./probe.ts";
import type { WorkerIdentity } from "./worker-client.ts";

/** A wind_down message queued for the worker: sent on every heartbeat answer until acked. */
interface QueuedMessage {
  msgId: string;
  ns: string;
  id: string;
  /** When the instance's deadline falls (ms); null revokes. */
  deadlineAt: number | null;
}

/** One heartbeat the stub answered 200, and what it carried and was given. */
export interface HeartbeatSeen {
  at: number;
  acks: string[];
  draining: boolean;
  msgIds: string[];
  probe: ProbeResult;
}

const BODY_LIMIT = 8 * 1024 * 1024;

/**
 * The worker's Pinboard, as far as a worker sees it: /registry/register, heartbeat, release, tag
 * and deregister, with the protocol's bodies and answers (docs/protocol.md, "Worker routes"). It
 * probes the challenge on each register and heartbeat as Pinboard does, records what it saw, and
 * lets the checks withhold the lease, drain the worker and queue wind_down messages.
 */
export class StubRegistry {
  worker: WorkerIdentity | null = null;
  /** Each register's probe, in order (failed ones included). */
  readonly registerProbes: ProbeResult[] = [];
  /** Register bodies the protocol's schema refused, as the 400 said. */
  readonly refusedBodies: string[] = [];
  readonly heartbeats: HeartbeatSeen[] = [];
  /** Errors of the registry's own (none expected); run.ts reports them. */
  readonly faults: string[] = [];
  /** Heartbeats answered 503 while the lease is withheld. */
  withheld = 0;
  registrations = 0;
  deregistered = false;
  /** The worker process exited: nothing waits for it any longer. */
  workerGone = false;
  withholding = false;
  draining = false;
  private readonly messages: QueuedMessage[] = [];
  /** Sessions the registry answers `unknown session` for, as if their record had expired. */
  private readonly forgotten = new Set<string>();
  private readonly changed = new Set<() => void>();
  private server: Server | null = null;

  constructor(readonly leaseMs: number) {}

  async listen(host: string, port: number): Promise<string> {
    const server = createServer((req, res) => void this.handle(req, res));
    this.server = server;
    await new Promise<void>((resolve, reject) => {
      server.once("error", reject);
      server.listen(port, host, () => resolve());
    });
    const address = server.address() as AddressInfo;
    const shownHost = address.family === "IPv6" ? `[${address.address}]` : address.address;
    return `http://${shownHost}:${address.port}`;
  }

  async close(): Promise<void> {
    const server = this.server;
    if (server === null) return;
    server.closeAllConnections();
    await new Promise<void>((resolve) => server.close(() => resolve()));
  }

  /** Forgets the current session: its next heartbeat is answered 409 unknown session, reregister. */
  forgetSession(): void {
    if (this.worker !== null) this.forgotten.add(this.worker.sessionId);
  }

  /** Queues a wind_down for `ns`/`id` with its deadline `deadlineS` seconds from now. */
  windDown(msgId: string, ns: string, id: string, deadlineS: number): void {
    this.messages.push({ msgId, ns, id, deadlineAt: Date.now() + deadlineS * 1000 });
  }

  /**
   * Resolves once `predicate` holds (checked after every registry call), or false after
   * `timeoutMs` or once the worker is gone (`workerGone`).
   */
  waitFor(predicate: () => boolean, timeoutMs: number): Promise<boolean> {
    if (predicate()) return Promise.resolve(true);
    if (this.workerGone) return Promise.resolve(false);
    return new Promise((resolve) => {
      const check = () => {
        if (predicate()) finish(true);
        else if (this.workerGone) finish(false);
      };
      const finish = (value: boolean) => {
        clearTimeout(timer);
        this.changed.delete(check);
        resolve(value);
      };
      const timer = setTimeout(() => finish(false), timeoutMs);
      this.changed.add(check);
    });
  }

  /** Runs the waiters' predicates again: after every registry call, and when the worker exits. */
  notify(): void {
    for (const check of [...this.changed]) check();
  }

  private async handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    try {
      if (req.method !== "POST") return reply(res, 404, { error: "not found" });
      const path = new URL(req.url ?? "/", "http://stub").pathname.replace(/\/+$/, "");
      const text = await readBody(req);
      if (text === null) return reply(res, 413, { error: "body too large" });
      let body: unknown;
      try {
        body = JSON.parse(text);
      } catch {
        return reply(res, 400, { error: "invalid json" });
      }
      const [status, answer] = await this.answer(path, body);
      reply(res, status, answer);
    } catch {
      // The worker went away mid-request (it aborted a call): nobody to answer.
      res.destroy();
    } finally {
      this.notify();
    }
  }

  /** The route's answer; an error of the registry's own is recorded and answered 500. */
  private async answer(path: string, body: unknown): Promise<[number, unknown]> {
    try {
      return await this.route(path, body);
    } catch (err) {
      this.faults.push(err instanceof Error ? err.message : String(err));
      return [500, { error: "internal error" }];
    }
  }

  private async route(path: string, body: unknown): Promise<[number, unknown]> {
    switch (path) {
      case "/registry/register":
        return this.register(body);
      case "/registry/heartbeat":
        return this.heartbeat(body);
      case "/registry/release": {
        const parsed = releaseBody.schema.safeParse(body);
        if (!parsed.success) return [400, { error: releaseBody.expected }];
        if (!this.known(parsed.data[0]!.sessionId)) return unknownSession();
        return [200, { released: parsed.data.length }];
      }
      case "/registry/tag": {
        const parsed = tagBody.schema.safeParse(body);
        if (!parsed.success) return [400, { error: tagBody.expected }];
        return this.known(parsed.data.sessionId) ? [200, { tagged: true }] : unknownSession();
      }
      case "/registry/deregister": {
        const parsed = deregisterBody.schema.safeParse(body);
        if (!parsed.success) return [400, { error: deregisterBody.expected }];
        if (!this.known(parsed.data.sessionId)) return unknownSession();
        this.deregistered = true;
        return [200, {}];
      }
      default:
        return [404, { error: "not found" }];
    }
  }

  private known(sessionId: string): boolean {
    return (
      this.worker !== null &&
      this.worker.sessionId === sessionId &&
      !this.deregistered &&
      !this.forgotten.has(sessionId)
    );
  }

  private async register(body: unknown): Promise<[number, unknown]> {
    const parsed = registerBody.schema.safeParse(body);
    if (!parsed.success) {
      this.refusedBodies.push(registerBody.expected);
      return [400, { error: registerBody.expected }];
    }
    const b = parsed.data;
    const advertiseUrl = b.advertiseUrl.replace(/\/+$/, "");
    const probe = await probeChallenge({
      advertiseUrl,
      secret: b.secret,
      challenge: b.challenge,
      value: b.challengeValue,
    });
    this.registerProbes.push(probe);
    if (probe.outcome !== "pass") return [400, { error: "registration probe failed" }];
    const sessionId = newSessionId();
    this.worker = {
      sessionId,
      secret: b.secret,
      advertiseUrl,
      namespaces: b.namespaces,
      clientId: b.clientId,
      challenge: b.challenge,
    };
    this.registrations++;
    this.deregistered = false;
    this.messages.length = 0;
    // The protocol's own reply schemas (strict: no field more or less) hold the answers to it.
    return [200, registerReply.parse({ sessionId, expiresInMs: this.leaseMs, draining: this.draining || b.draining })];
  }

  private async heartbeat(body: unknown): Promise<[number, unknown]> {
    const parsed = heartbeatBody.schema.safeParse(body);
    if (!parsed.success) return [400, { error: heartbeatBody.expected }];
    const b = parsed.data;
    if (!this.known(b.sessionId)) return unknownSession();
    if (this.withholding) {
      this.withheld++;
      return [503, { error: "check-worker withholds the lease" }];
    }
    const worker = this.worker!;
    const probe = await probeChallenge({ ...worker, challenge: b.challenge, value: b.challengeValue });
    if (probe.outcome === "mismatch") {
      this.worker = null;
      return [409, { error: "registration voided: challenge value mismatch on the advertise URL", reregister: true }];
    }
    worker.challenge = b.challenge;
    const acks = (b.acks ?? []).map(String);
    for (const msgId of acks) {
      const i = this.messages.findIndex((m) => m.msgId === msgId);
      if (i >= 0) this.messages.splice(i, 1);
    }
    const now = Date.now();
    const messages = this.messages.map((m) => ({
      msgId: m.msgId,
      type: "wind_down",
      ns: m.ns,
      id: m.id,
      deadline: m.deadlineAt === null ? null : Math.max(0, Math.floor((m.deadlineAt - now) / 1000)),
    }));
    const draining = this.draining || b.draining;
    this.heartbeats.push({ at: now, acks, draining, msgIds: messages.map((m) => m.msgId), probe });
    return [
      200,
      heartbeatReply.parse({
        expiresInMs: this.leaseMs,
        draining,
        ...(probe.outcome === "fail" ? { degraded: true } : {}),
        ...(messages.length > 0 ? { messages } : {}),
      }),
    ];
  }
}

const unknownSession = (): [number, unknown] => [409, { error: "unknown session", reregister: true }];

function reply(res: ServerResponse, status: number, body: unknown): void {
  const text = JSON.stringify(body);
  res.writeHead(status, { "content-type": "application/json", "content-length": Buffer.byteLength(text) });
  res.end(text);
}

async function readBody(req: IncomingMessage): Promise<string | null> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of req as AsyncIterable<Buffer>) {
    size += chunk.length;
    if (size > BODY_LIMIT) return null;
    chunks.push(chunk);
  }
  return Buffer.concat(chunks).toString("utf8");
}
