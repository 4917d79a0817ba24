/**
 * What the soak runs against, all on loopback: a private redis-server, the Pinboard Node entry as
 * a child process with `npm start`'s V8 flags (its RSS read from /proc/<pid>/status), and
 * workers of the worker library in this process, replaced one at a time (churn) and drained by
 * the operator now and then.
 */
import { type ChildProcess, spawn } from "node:child_process";
import { randomBytes } from "node:crypto";
import { readFileSync } from "node:fs";
import { fileURLToPath } from "node:url";
import { startNodeFlags } from "../../bin/node-flags.mjs";
import { mintCredential } from "../../src/auth/mint.ts";
import {
  createWorker,
  type Instance,
  type InstanceContext,
  type PinnedWebSocket,
  type PinnedWorker,
  type RequestContext,
} from "../../src/pinned/index.ts";
import type { Listening } from "../../src/pinned/node-server.ts";
import { type EmbeddedRedis, startEmbeddedRedis } from "../../src/runtime/node/dev-store/embedded-redis.ts";
import { freePort } from "../../src/runtime/node/process/free-port.ts";
import { reapOnExit } from "../../src/runtime/node/process/reap-on-exit.ts";
import { nodeEntryEnv } from "../node-entry-env.ts";

const ROOT = fileURLToPath(new URL("../../", import.meta.url));

/** The soak's instance: GET answers its hit count, POST echoes the body size, WebSockets echo. */
export class SoakInstance implements Instance {
  hits = 0;
  constructor(readonly ctx: InstanceContext) {}

  async fetch(request: Request, ctx: RequestContext): Promise<Response> {
    this.hits++;
    if (request.headers.get("upgrade")?.toLowerCase() === "websocket") return ctx.acceptWebSocket(request).response;
    const bytes = request.body ? (await request.arrayBuffer()).byteLength : 0;
    return Response.json({ id: ctx.id, epoch: ctx.epoch, hits: this.hits, bytes });
  }

  webSocketMessage(socket: PinnedWebSocket, message: string | ArrayBuffer): void {
    socket.send(message);
  }
}

/** A span of time in which a worker was being taken away (drain, deregister, close). */
export interface ChurnWindow {
  from: number;
  to: number;
}

export interface SoakWorker {
  worker: PinnedWorker;
  listening: Listening;
  startedAt: number;
}

const quiet = { info: () => {}, warn: () => {}, error: () => {} };

/** After a churn's listener closed, how long its consequences may still show (in-flight answers). */
const CHURN_TAIL_MS = 2000;

export class SoakCluster {
  redis!: EmbeddedRedis;
  pinboard!: ChildProcess;
  url = "";
  pid = 0;
  workerToken = "";
  operatorToken = "";
  readonly workers: SoakWorker[] = [];
  readonly churns: ChurnWindow[] = [];
  /** Operator drains in progress or done: [from, to] of each (to = undrain + tail). */
  readonly drains: ChurnWindow[] = [];
  churnCount = 0;
  drainCount = 0;
  /** The Pinboard process's output: recent lines, and every error-level line seen. */
  private recent: string[] = [];
  readonly errorLines: string[] = [];
  private stopped = false;

  constructor(private readonly options: { leaseMs: number; log: (line: string) => void }) {}

  async start(workers: number): Promise<void> {
    this.redis = await startEmbeddedRedis();
    const secret = randomBytes(32).toString("hex");
    const port = await freePort();
    this.url = `http://127.0.0.1:${port}`;
    this.pinboard = spawn(process.execPath, [...startNodeFlags(), "--import", "tsx", "src/node.ts"], {
      cwd: ROOT,
      env: nodeEntryEnv(port, { REDIS_URL: this.redis.url }, secret, {
        PINBOARD_LEASE_TTL_MS: String(this.options.leaseMs),
      }),
      stdio: ["ignore", "pipe", "pipe"],
    });
    reapOnExit(this.pinboard);
    this.pinboard.once("exit", (code, signal) => {
      if (!this.stopped) this.errorLines.push(`pinboard exited unexpectedly (code ${code}, signal ${signal})`);
    });
    let partial = "";
    const onData = (chunk: Buffer) => {
      const lines = (partial + chunk.toString()).split("\n");
      partial = lines.pop() ?? "";
      for (const line of lines) {
        this.recent.push(line);
        if (this.recent.length > 50) this.recent.shift();
        if (/"level":"error"/.test(line)) this.errorLines.push(line);
      }
    };
    this.pinboard.stdout?.on("data", onData);
    this.pinboard.stderr?.on("data", onData);
    this.pid = this.pinboard.pid ?? 0;

    const deadline = Date.now() + 30_000;
    for (;;) {
      if (this.pinboard.exitCode !== null)
        throw new Error(`pinboard exited with ${this.pinboard.exitCode}:\n${this.recent.join("\n")}`);
      if (
        await fetch(`${this.url}/readyz`).then(
          (r) => r.status === 200,
          () => false,
        )
      )
        break;
      if (Date.now() > deadline) throw new Error(`pinboard did not become ready:\n${this.recent.join("\n")}`);
      await sleep(100);
    }

    const all = { namespaces: ["*"], allowedBackendHosts: ["127.0.0.1"] };
    this.workerToken = await mintCredential({
      secret,
      sub: "soak-worker",
      scopes: ["pinboard:worker"],
      pinboard: all,
      ttlSeconds: 0,
    });
    this.operatorToken = await mintCredential({
      secret,
      sub: "soak-operator",
      scopes: ["pinboard:operator"],
      pinboard: { namespaces: ["*"], allowedBackendHosts: ["*"] },
      ttlSeconds: 0,
    });
    for (let i = 0; i < workers; i++) await this.addWorker();
  }

  async addWorker(): Promise<SoakWorker> {
    const worker = createWorker({
      pinboardUrl: this.url,
      credential: this.workerToken,
      namespaces: { "/soak": SoakInstance, "/soakws": SoakInstance },
      maxInstances: 10_000_000,
      logger: quiet,
    });
    const listening = await worker.listen({ port: 0 });
    await worker.start();
    const entry = { worker, listening, startedAt: Date.now() };
    this.workers.push(entry);
    return entry;
  }

  /**
   * Churn: the oldest worker leaves the way a deploy takes one away (own drain, so no new
   * placements reach it; deregister; a grace for answers in flight; close), then a new one joins.
   */
  async churn(): Promise<void> {
    const old = this.workers.shift();
    if (!old) return;
    const window: ChurnWindow = { from: Date.now(), to: Number.POSITIVE_INFINITY };
    this.churns.push(window);
    try {
      await old.worker.drain().catch(() => {});
      await sleep(500);
      await old.worker.stop().catch(() => {});
      await sleep(1000);
      await old.listening.close();
      await this.addWorker();
      this.churnCount++;
    } finally {
      window.to = Date.now() + CHURN_TAIL_MS;
    }
  }

  /**
   * An operator drain of a random worker: a cordon (deadline null), or every third time a timed
   * drain (deadline 0, i.e. forced release one lease later), undrained after a lease and a bit.
   */
  async drain(): Promise<void> {
    const target = this.workers[Math.floor(Math.random() * this.workers.length)];
    if (!target) return;
    const timed = this.drainCount % 3 === 2;
    const window: ChurnWindow = { from: Date.now(), to: Number.POSITIVE_INFINITY };
    this.drains.push(window);
    try {
      await this.operator("/registry/drain", { clientId: target.worker.clientId, deadline: timed ? 0 : null });
      await sleep(this.options.leaseMs + 1000);
      await this.operator("/registry/undrain", { clientId: target.worker.clientId });
      this.drainCount++;
    } finally {
      window.to = Date.now() + CHURN_TAIL_MS;
    }
  }

  private async operator(path: string, body: { clientId: string; deadline?: number | null }): Promise<void> {
    const res = await fetch(`${this.url}${path}`, {
      method: "POST",
      headers: { authorization: `Bearer ${this.operatorToken}`, "content-type": "application/json" },
      body: JSON.stringify(body),
    });
    const text = await res.text();
    // An undrain of a worker churned away meanwhile is 403 (unknown clientId), as the spec says.
    const gone = res.status === 403 && !this.workers.some((w) => w.worker.clientId === body.clientId);
    if (res.status !== 200 && !gone) this.options.log(`soak: operator ${path} answered ${res.status}: ${text}`);
  }

  /** True when `at` (ms) falls inside a churn, where a taken-away worker legitimately shows. */
  inChurn(at: number): boolean {
    return this.churns.some((w) => at >= w.from && at <= w.to);
  }

  inDrain(at: number): boolean {
    return this.drains.some((w) => at >= w.from && at <= w.to);
  }

  /** Pinboard's resident set in MB, from /proc (Linux), else from /registry/health. */
  async rssMb(): Promise<number | null> {
    try {
      const status = readFileSync(`/proc/${this.pid}/status`, "utf8");
      const kb = /^VmRSS:\s+(\d+) kB/m.exec(status)?.[1];
      if (kb) return Number(kb) / 1024;
    } catch {
      // not Linux, or the process is gone
    }
    try {
      const res = await fetch(`${this.url}/registry/health`, {
        headers: { authorization: `Bearer ${this.operatorToken}` },
      });
      const body = (await res.json()) as { rssBytes?: number };
      return typeof body.rssBytes === "number" ? body.rssBytes / 1024 / 1024 : null;
    } catch {
      return null;
    }
  }

  /** The cold-start window left (GET /registry/health quarantineMs); 0 once every touched bucket is out of it. */
  async quarantineMs(): Promise<number> {
    try {
      const res = await fetch(`${this.url}/registry/health`, {
        headers: { authorization: `Bearer ${this.operatorToken}` },
      });
      return Number(((await res.json()) as { quarantineMs?: number }).quarantineMs ?? 0);
    } catch {
      return 0;
    }
  }

  recentOutput(): string {
    return this.recent.join("\n");
  }

  async stop(): Promise<void> {
    this.stopped = true;
    await Promise.all(
      this.workers.splice(0).map(async (w) => {
        await w.worker.stop().catch(() => {});
        await w.listening.close();
      }),
    );
    await new Promise<void>((resolve) => {
      if (!this.pinboard || this.pinboard.exitCode !== null || this.pinboard.signalCode !== null) return resolve();
      const kill = setTimeout(() => this.pinboard.kill("SIGKILL"), 5000);
      this.pinboard.once("exit", () => {
        clearTimeout(kill);
        resolve();
      });
      this.pinboard.kill("SIGTERM");
    });
    await this.redis?.stop();
  }
}

export const sleep = (ms: number) => new Promise<void>((r) => setTimeout(r, ms));
