import type { Hono } from "hono";
import { AttestationGuard } from "./attestation-guard.ts";
import { ChallengeState } from "./challenge.ts";
import { DrainEnd } from "./drain-end.ts";
import { InstanceTable } from "./instance-table.ts";
import { DEFAULT_ACTIVATION_TIMEOUT_MS, type LiveInstance } from "./live-instance.ts";
import { MemoryDurabilityStore } from "./memory-durability.ts";
import { nodeHs256Check } from "./node-hmac.ts";
import { type Listening, type ListenOptions, listenPinned } from "./node-server.ts";
import { PinboardClient } from "./pinboard-client.ts";
import { Registration, type RegistrationFields, type RegistrationHooks } from "./registration.ts";
import type { RefusalReason } from "./responses.ts";
import { buildRoutes } from "./routes.ts";
import { SeenAttestations } from "./seen-attestations.ts";
import { buildStats } from "./stats.ts";
import type { PinnedLogger } from "./types.ts";
import { WindDowns } from "./wind-down.ts";
import { checkWorkerOptions, type WorkerOptions, type WorkerSettings } from "./worker-options.ts";

export type { WorkerOptions } from "./worker-options.ts";

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
  /**
   * Stops serving and hands the instances over: refuses new activations and new requests (the
   * in-band refusal, so Pinboard re-places them elsewhere at once), lets requests in flight run
   * for up to `graceMs` (default 0), releases every instance's placement quoting its epoch, then
   * stops heartbeating and deregisters (three tries at most per call).
   */
  stop(options?: { graceMs?: number }): Promise<void>;
  /** Serves the app on Node with WebSocket support. */
  listen(options?: ListenOptions): Promise<Listening>;
  /** Sets the own draining flag and tells Pinboard at once. */
  drain(): Promise<void>;
  /**
   * Settles once a timed operator drain reached its deadline and the worker stopped serving for
   * good (see drain-end.ts); never for a cordon or a drain lifted in time. Exit 0 then.
   */
  readonly drained: Promise<void>;
  /** Resolves true once no request is in flight, false after `timeoutMs`. */
  idle(timeoutMs?: number): Promise<boolean>;
  stats(): Record<string, unknown>;
  instances(): { ns: string; id: string; epoch: string }[];
}

/** What the parts of a worker change as it runs. */
interface WorkerState {
  /** The worker's own drain flag (drain(), stop()), apart from an operator drain. */
  ownDraining: boolean;
  /** Where Pinboard reaches the worker: the option, or the URL of listen(). */
  advertiseUrl: string | undefined;
}

const NO_ADVERTISE_URL =
  "start(): no URL to advertise: call listen() first, or set the advertiseUrl option (where Pinboard reaches this worker)";

export function createWorker(options: WorkerOptions): PinnedWorker {
  const settings = checkWorkerOptions(options);
  const { log, now } = settings;
  const state: WorkerState = { ownDraining: false, advertiseUrl: settings.advertiseUrl };
  const startedAt = now();

  const challenge = new ChallengeState();
  const headroom = options.headroom ?? (() => Math.max(0, settings.maxInstances - table.size));
  const draining = () => state.ownDraining || registration.operatorDraining;
  const refusal = (): RefusalReason | null =>
    draining() ? "draining" : registration.lease.healthy() ? null : "lease-unhealthy";

  const table: InstanceTable = new InstanceTable({
    classes: settings.classes,
    store: options.durability ?? new MemoryDurabilityStore(),
    hostname: options.hostname,
    maxInstances: settings.maxInstances,
    activationTimeoutMs: options.activationTimeoutMs ?? DEFAULT_ACTIVATION_TIMEOUT_MS,
    refusal,
    lapsed: () => registration.lease.lapsed(),
    log,
    now,
    gates: settings.gates,
  });

  const windDowns: WindDowns = new WindDowns({
    table,
    release: (lives) => registration.release(lives.map((live) => ({ ns: live.ns, id: live.id, epoch: live.epoch }))),
    drainDeadlinePassed: () => void drainEnd.end(),
    log,
    now,
    graceMs: options.windDownGraceMs ?? 30_000,
  });

  const registration: Registration = new Registration(
    new PinboardClient({ pinboardUrl: options.pinboardUrl, credential: options.credential, fetch: options.fetch }),
    challenge,
    registrationFields(options, settings, state),
    registrationHooks({ table, windDowns, headroom, state, log, drainEnd: () => drainEnd }),
    { log, now, leaseUnhealthyAfterMs: options.leaseUnhealthyAfterMs },
  );

  const drainEnd = new DrainEnd({
    clientId: settings.clientId,
    halt: () => registration.halt(),
    windDownAll: () => windDowns.windDownAll(),
    retire: () => {
      state.ownDraining = true;
      windDowns.cancelAll();
      registration.abandon();
      table.closeAll(1001, "worker drained");
    },
    log,
    onDrained: options.onDrained,
  });

  const { namespaces } = settings;
  const stats = () => buildStats({ table, registration, namespaces, draining, headroom, startedAt, now });

  const app = buildRoutes({
    basePath: settings.basePath,
    guard: attestationGuard(options, settings, registration, log),
    challenge,
    table,
    namespaces: new Set(namespaces),
    durable: options.durability !== undefined,
    wakeWaitMs: options.wakeWaitMs ?? 5000,
    stats,
    log,
    overload: overloadLog(log, now),
  });

  return workerHandle({ app, settings, state, table, windDowns, registration, draining, stats, drainEnd });
}

/** The log line of a full input queue: the first refusal, then at most one line a second per instance. */
function overloadLog(log: PinnedLogger, now: () => number): (live: LiveInstance, limit: number) => void {
  const seen = new WeakMap<LiveInstance, { at: number; refused: number }>();
  return (live, limit) => {
    const entry = seen.get(live) ?? { at: Number.NEGATIVE_INFINITY, refused: 0 };
    seen.set(live, entry);
    entry.refused++;
    if (now() - entry.at < 1000) return;
    log.warn(
      "instance queue full: answered 503 instance overloaded (raise maxQueuedEvents, or spread the load over more ids)",
      {
        ns: live.ns,
        id: live.id,
        maxQueuedEvents: limit,
        refused: entry.refused,
      },
    );
    entry.at = now();
    entry.refused = 0;
  };
}

/** What Pinboard is told at every register. */
function registrationFields(options: WorkerOptions, settings: WorkerSettings, state: WorkerState): RegistrationFields {
  return {
    clientId: settings.clientId,
    secret: settings.secret,
    namespaces: settings.namespaces,
    advertiseUrl: () => {
      if (!state.advertiseUrl) throw new Error(NO_ADVERTISE_URL);
      return state.advertiseUrl;
    },
    hostname: options.hostname,
    env: options.env,
    envs: options.envs,
    takeover: options.takeover,
    bindingEpoch: options.bindingEpoch,
  };
}

/** What the registration loop asks of the worker, and tells it. */
function registrationHooks(parts: {
  table: InstanceTable;
  windDowns: WindDowns;
  headroom: () => number;
  state: WorkerState;
  log: PinnedLogger;
  drainEnd: () => DrainEnd;
}): RegistrationHooks {
  const { table, windDowns, state, log } = parts;
  return {
    headroom: parts.headroom,
    ownDraining: () => state.ownDraining,
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
    message: (message, sinceSentMs) => windDowns.handle(message, sinceSentMs),
    drain: (isDraining, deadline) => windDowns.drain(isDraining, deadline),
    drainDeadlinePassed: () => void parts.drainEnd().end(),
    lapsedLeaseRenewed: () => {
      const resident = table.all();
      for (const live of resident) table.retire(live, 1012, "lease lapsed");
      if (resident.length > 0)
        log.warn("lease lapsed before this renewal: instances retired", { count: resident.length });
    },
  };
}

function attestationGuard(
  options: WorkerOptions,
  settings: WorkerSettings,
  registration: Registration,
  log: PinnedLogger,
): AttestationGuard {
  return new AttestationGuard({
    secret: settings.secret,
    // The live session, the one just lost for a few seconds (registration.ts), the local one.
    audiences: () => [registration.sessionId, registration.retiredSessionId(), options.localAudience],
    // A forward on the session a register is about to name waits for that answer.
    registering: () => registration.registering(),
    log,
    basePath: settings.basePath,
    requireBinding: options.requireBoundAttestation === true,
    acceptance: settings.acceptance,
    seen: new SeenAttestations(settings.maxRemembered, (floor) =>
      log.warn("attestation ids forgotten before their tokens expire: tokens expiring by then are refused", {
        maxRemembered: settings.maxRemembered,
        refusedUntil: new Date(floor * 1000).toISOString(),
      }),
    ),
    nowMs: settings.now,
    check: nodeHs256Check(settings.secret),
  });
}

/** The worker as its user holds it. */
function workerHandle(parts: {
  app: Hono;
  settings: WorkerSettings;
  state: WorkerState;
  table: InstanceTable;
  windDowns: WindDowns;
  registration: Registration;
  draining: () => boolean;
  stats: () => Record<string, unknown>;
  drainEnd: DrainEnd;
}): PinnedWorker {
  const { app, settings, state, table, windDowns, registration, draining, stats, drainEnd } = parts;
  return {
    app,
    clientId: settings.clientId,
    secret: settings.secret,
    get sessionId() {
      return registration.sessionId;
    },
    get advertiseUrl() {
      return state.advertiseUrl;
    },
    get draining() {
      return draining();
    },
    async start() {
      // Without a URL to advertise, every register would fail the same way: say so once.
      if (!state.advertiseUrl) throw new Error(NO_ADVERTISE_URL);
      return registration.start();
    },
    async stop(stopOptions = {}) {
      const told = draining();
      state.ownDraining = true;
      windDowns.cancelAll();
      // Pinboard first learns this worker is draining, so that the refusals below re-place elsewhere.
      if (!told) await registration.heartbeatNow();
      await windDowns.handOver(stopOptions.graceMs ?? 0);
      await registration.stop();
      table.closeAll(1001, "worker stopping");
    },
    drained: drainEnd.promise,
    async listen(listenOptions) {
      const listening = await listenPinned(app.fetch, listenOptions);
      state.advertiseUrl ??= `${listening.url}${settings.basePath}`;
      return listening;
    },
    async drain() {
      state.ownDraining = true;
      await registration.heartbeatNow();
    },
    idle: (timeoutMs = 30_000) => table.idle(timeoutMs),
    stats,
    instances: () => table.all().map((live) => ({ ns: live.ns, id: live.id, epoch: live.epoch })),
  };
}
