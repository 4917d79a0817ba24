import type { Hono } from "hono";
import { isWorkerNamespace } from "../contract/names.ts";
import { AttestationGuard } from "./attestation-guard.ts";
import { ChallengeState, randomToken } from "./challenge.ts";
import type { DurabilityStore } from "./durability.ts";
import { InstanceTable } from "./instance-table.ts";
import { DEFAULT_ACTIVATION_TIMEOUT_MS } from "./live-instance.ts";
import { MemoryDurabilityStore } from "./memory-durability.ts";
import { type Listening, type ListenOptions, listenPinned } from "./node-server.ts";
import { type Credential, PinboardClient } from "./pinboard-client.ts";
import { Registration } from "./registration.ts";
import type { RefusalReason } from "./responses.ts";
import { buildRoutes } from "./routes.ts";
import { buildStats } from "./stats.ts";
import type { InstanceClass, PinnedLogger } from "./types.ts";
import { WindDowns } from "./wind-down.ts";

export interface WorkerOptions {
  /** Pinboard's base URL, e.g. http://127.0.0.1:8787 (with its basePath, if any). */
  pinboardUrl: string;
  /** Passport credential with the pinboard:worker scope, or a function returning a fresh one. */
  credential: Credential;
  /** Stable name of this worker (operator drains address it). Default: a random one. */
  clientId?: string;
  /** Where Pinboard reaches this worker. Default: the URL of listen(). */
  advertiseUrl?: string;
  /** Namespace ("/counter") → instance class. */
  namespaces: Record<string, InstanceClass>;
  /** Where instances keep durable state. Default: process memory (and no _wake route). */
  durability?: DurabilityStore;
  /** Headroom reported to Pinboard. Default: maxInstances minus resident instances. */
  headroom?: () => number;
  /** Resident instances at most; new activations beyond are refused. Default 1000. */
  maxInstances?: number;
  /** Refuse new activations once the lease was not renewed for this long. Default 2/3 of the lease TTL. */
  leaseUnhealthyAfterMs?: number;
  /** fetch used for Pinboard calls. */
  fetch?: typeof fetch;
  /** The secret Pinboard signs attestations with (at least 16 characters). Default: random per process. */
  secret?: string;
  /** An audience accepted besides the live sessionId (in-process callers, tests). */
  localAudience?: string;
  /**
   * Refuse attestations that name no request (no htm, htu and epoch claims). Pinboard signs them
   * on every call; set this once every Pinboard in front of the worker does. Default false.
   */
  requireBoundAttestation?: boolean;
  /** Hostname-aware registration fields. */
  hostname?: string;
  env?: string;
  envs?: Record<string, string>;
  takeover?: "wind_down" | "deny";
  bindingEpoch?: number;
  /** Path prefix the app serves under. Default: the path of advertiseUrl. */
  basePath?: string;
  logger?: PinnedLogger;
  /** After a wind-down deadline, how long in-flight requests may still run. Default 30000. */
  windDownGraceMs?: number;
  /** How long _wake waits for an activation before answering 202. Default 5000. */
  wakeWaitMs?: number;
  /**
   * How long an activation waits for the durability store before the request answers
   * 503 activation failed (Retry-After: 1) and the log names the store and the cause. Default 5000.
   */
  activationTimeoutMs?: number;
  /** Clock (ms), for tests. */
  now?: () => number;
}

export interface PinnedWorker {
  /** The worker's Hono app: mount it, or serve it with listen(). */
  readonly app: Hono;
  readonly clientId: string;
  readonly secret: string;
  readonly sessionId: string | null;
  readonly advertiseUrl: string | undefined;
  /** Own drain flag or an operator drain. */
  readonly draining: boolean;
  /** Registers with Pinboard and starts heartbeating; resolves once registered. */
  start(): Promise<void>;
  /** Refuses new activations, stops heartbeating and deregisters (three tries at most). */
  stop(): Promise<void>;
  /** Serves the app on Node with WebSocket support. */
  listen(options?: ListenOptions): Promise<Listening>;
  /** Sets the own draining flag and tells Pinboard at once. */
  drain(): Promise<void>;
  /** Resolves true once no request is in flight, false after `timeoutMs`. */
  idle(timeoutMs?: number): Promise<boolean>;
  stats(): Record<string, unknown>;
  instances(): { ns: string; id: string; epoch: string }[];
}

const consoleLogger: PinnedLogger = {
  info: (message, fields) => console.log(`[pinned] ${message}`, fields ?? ""),
  warn: (message, fields) => console.warn(`[pinned] ${message}`, fields ?? ""),
  error: (message, fields) => console.error(`[pinned] ${message}`, fields ?? ""),
};

/** The shortest secret Pinboard accepts at register. */
export const MIN_SECRET_LENGTH = 16;

/**
 * Checks a URL option: http:// or https://, parseable, no user, query or fragment. A URL
 * without a scheme ("127.0.0.1:8787") would otherwise fail every call, retried forever.
 */
function checkHttpUrl(name: string, value: unknown, example: string): string {
  if (typeof value !== "string" || value.trim() === "") {
    throw new TypeError(`createWorker: ${name} is required, e.g. "${example}"`);
  }
  if (!/^[a-z][a-z0-9+.-]*:\/\//i.test(value)) {
    throw new TypeError(
      `createWorker: ${name} ${JSON.stringify(value)} has no scheme; write "http://${value}" (or https://)`,
    );
  }
  let url: URL;
  try {
    url = new URL(value);
  } catch {
    throw new TypeError(`createWorker: ${name} ${JSON.stringify(value)} is not a valid URL, e.g. "${example}"`);
  }
  if (url.protocol !== "http:" && url.protocol !== "https:") {
    throw new TypeError(`createWorker: ${name} must be an http:// or https:// URL, not ${JSON.stringify(value)}`);
  }
  if (url.username || url.password) throw new TypeError(`createWorker: ${name} must not carry a user or password`);
  if (url.search || url.hash) {
    throw new TypeError(`createWorker: ${name} ${JSON.stringify(value)} must not have a query or fragment`);
  }
  return value;
}

function checkNumber(name: string, value: number | undefined, kind: "positive number" | "non-negative integer"): void {
  if (value === undefined) return;
  const ok =
    typeof value === "number" &&
    Number.isFinite(value) &&
    (kind === "positive number" ? value > 0 : value >= 0 && Number.isInteger(value));
  if (!ok) throw new RangeError(`createWorker: ${name} must be a ${kind}, not ${String(value)}`);
}

export function createWorker(options: WorkerOptions): PinnedWorker {
  checkHttpUrl("pinboardUrl", options.pinboardUrl, "http://127.0.0.1:8787");
  if (options.advertiseUrl !== undefined) checkHttpUrl("advertiseUrl", options.advertiseUrl, "http://10.0.0.7:9001");
  const credential: unknown = options.credential;
  if (typeof credential === "string" ? credential.trim() === "" : typeof credential !== "function") {
    throw new TypeError(
      "createWorker: credential is empty; pass a Passport credential with the pinboard:worker scope (npm start prints PINBOARD_WORKER_TOKEN)",
    );
  }
  checkNumber("maxInstances", options.maxInstances, "non-negative integer");
  checkNumber("activationTimeoutMs", options.activationTimeoutMs, "positive number");
  const log = options.logger ?? consoleLogger;
  const now = options.now ?? Date.now;
  const classes = new Map(Object.entries(options.namespaces));
  if (classes.size === 0) throw new Error("createWorker: declare at least one namespace");
  for (const ns of classes.keys()) {
    if (!isWorkerNamespace(ns))
      throw new Error(`createWorker: invalid namespace ${JSON.stringify(ns)} (expected "/name")`);
  }
  const namespaces = [...classes.keys()];
  const secret = options.secret ?? randomToken(32);
  // Pinboard refuses a shorter one at register (it keys every attestation): fail here, not forever.
  if ([...secret].length < MIN_SECRET_LENGTH)
    throw new Error(`createWorker: secret must have at least ${MIN_SECRET_LENGTH} characters`);
  const clientId = options.clientId ?? `pinned-${randomToken(9)}`;
  const maxInstances = options.maxInstances ?? 1000;
  const basePath = (options.basePath ?? (options.advertiseUrl ? new URL(options.advertiseUrl).pathname : "")).replace(
    /\/+$/,
    "",
  );
  let advertiseUrl = options.advertiseUrl?.replace(/\/+$/, "");
  let ownDraining = false;
  const startedAt = now();

  const challenge = new ChallengeState();
  const headroom = options.headroom ?? (() => Math.max(0, maxInstances - table.size));
  const draining = () => ownDraining || registration.operatorDraining;
  const refusal = (): RefusalReason | null =>
    draining() ? "draining" : registration.leaseHealthy() ? null : "lease-unhealthy";

  const table: InstanceTable = new InstanceTable({
    classes,
    store: options.durability ?? new MemoryDurabilityStore(),
    hostname: options.hostname,
    maxInstances,
    activationTimeoutMs: options.activationTimeoutMs ?? DEFAULT_ACTIVATION_TIMEOUT_MS,
    refusal,
    log,
    now,
  });

  const windDowns: WindDowns = new WindDowns({
    table,
    release: (live) => registration.release([{ ns: live.ns, id: live.id, epoch: live.epoch }]),
    log,
    now,
    graceMs: options.windDownGraceMs ?? 30_000,
  });

  const registration: Registration = new Registration(
    new PinboardClient({ pinboardUrl: options.pinboardUrl, credential: options.credential, fetch: options.fetch }),
    challenge,
    {
      clientId,
      secret,
      namespaces,
      advertiseUrl: () => {
        if (!advertiseUrl) throw new Error("createWorker: set advertiseUrl or call listen() before start()");
        return advertiseUrl;
      },
      hostname: options.hostname,
      env: options.env,
      envs: options.envs,
      takeover: options.takeover,
      bindingEpoch: options.bindingEpoch,
    },
    {
      headroom,
      ownDraining: () => ownDraining,
      instances: () => {
        const out: Record<string, string[]> = {};
        for (const live of table.all()) if (!live.closing) (out[live.ns] ??= []).push(live.id);
        return out;
      },
      duplicates: (list) => {
        for (const { ns, id } of list) {
          const live = table.get(ns, id);
          if (live) table.retire(live, 1012, "instance placed elsewhere");
        }
        log.info("evicted duplicates", { count: list.length });
      },
      message: (message) => windDowns.handle(message),
      drain: (isDraining, deadline) => windDowns.drain(isDraining, deadline),
    },
    { log, now, leaseUnhealthyAfterMs: options.leaseUnhealthyAfterMs },
  );

  const stats = () => buildStats({ table, registration, namespaces, draining, headroom, startedAt, now });

  const app = buildRoutes({
    basePath,
    guard: new AttestationGuard({
      secret,
      // The live session, the one just lost for a few seconds (registration.ts), the local one.
      audiences: () => [registration.sessionId, registration.retiredSessionId(), options.localAudience],
      basePath,
      requireBinding: options.requireBoundAttestation === true,
      nowMs: now,
    }),
    challenge,
    table,
    namespaces: new Set(namespaces),
    durable: options.durability !== undefined,
    wakeWaitMs: options.wakeWaitMs ?? 5000,
    stats,
    log,
  });

  return {
    app,
    clientId,
    secret,
    get sessionId() {
      return registration.sessionId;
    },
    get advertiseUrl() {
      return advertiseUrl;
    },
    get draining() {
      return draining();
    },
    start: () => registration.start(),
    async stop() {
      ownDraining = true;
      windDowns.cancelAll();
      await registration.stop();
      table.closeAll(1001, "worker stopping");
    },
    async listen(listenOptions) {
      const listening = await listenPinned(app.fetch, listenOptions);
      advertiseUrl ??= `${listening.url}${basePath}`;
      return listening;
    },
    async drain() {
      ownDraining = true;
      await registration.heartbeatNow();
    },
    idle: (timeoutMs = 30_000) => table.idle(timeoutMs),
    stats,
    instances: () => table.all().map((live) => ({ ns: live.ns, id: live.id, epoch: live.epoch })),
  };
}
