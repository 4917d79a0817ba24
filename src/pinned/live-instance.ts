import { InstanceAlarm } from "./alarms.ts";
import { InstanceContextImpl } from "./context.ts";
import { type DurabilityStore, DurabilityUnavailableError, type StaleEpochError } from "./durability.ts";
import { DeliveryCancelledError, InputGate, InstanceEvent, QueueFullError, runAs } from "./input-gate.ts";
import { OutputGate } from "./output-gate.ts";
import { EpochStorage, type StorageGates } from "./storage.ts";
import type { AlarmInfo, Instance, InstanceClass, PinnedLogger } from "./types.ts";
import type { PinnedWebSocket, SocketSink } from "./websocket.ts";

export interface LiveInstanceDeps {
  ns: string;
  id: string;
  epoch: string;
  cls: InstanceClass;
  store: DurabilityStore;
  hostname?: string;
  /** How long the activation waits for the durability store before it fails. */
  activationTimeoutMs: number;
  log: PinnedLogger;
  now(): number;
  /** A write of this activation was fenced: a newer owner holds the instance. */
  onStale(live: LiveInstance, err: StaleEpochError): void;
  /** The worker's lease lapsed (Lease.lapsed): the instance may have another owner by now. */
  lapsed(): boolean;
  /** A write of this activation failed: the activation is broken and must go. */
  onBroken(live: LiveInstance, error: unknown): void;
  gates: GateSettings;
}

/** The worker's gate options (createWorker's allowConcurrency, allowUnconfirmed, maxQueuedEvents). */
export interface GateSettings {
  /** Storage calls do not hold the input gate: events interleave at every await. */
  allowConcurrency: boolean;
  /** Answers and WebSocket messages do not wait for the writes before them. */
  allowUnconfirmed: boolean;
  /** Events (requests, WebSocket messages) that may wait at the input gate; more are refused. */
  maxQueuedEvents: number;
}

export const DEFAULT_MAX_QUEUED_EVENTS = 1000;

/** Both gates on, as createWorker has them by default. */
export const GATES_ON: GateSettings = {
  allowConcurrency: false,
  allowUnconfirmed: false,
  maxQueuedEvents: DEFAULT_MAX_QUEUED_EVENTS,
};

/** How long an activation waits for the durability store by default (createWorker's activationTimeoutMs). */
export const DEFAULT_ACTIVATION_TIMEOUT_MS = 5000;
/** The close reason of a socket whose message came after the worker's lease lapsed (code 1012). */
const LEASE_LAPSED_CLOSE = "lease lapsed";

export type LiveState = "activating" | "active" | "retired";

/**
 * One activation: an instance object at one placement epoch, with its storage view, alarm,
 * sockets and in-flight count. A higher epoch never mutates it; the table retires it and
 * builds a new one, so everything here stays bound to `epoch`.
 */
export class LiveInstance {
  readonly ns: string;
  readonly id: string;
  readonly epoch: string;
  readonly epochValue: bigint;
  readonly storage: EpochStorage;
  readonly alarm: InstanceAlarm;
  readonly ctx: InstanceContextImpl;
  readonly sockets = new Set<PinnedWebSocket>();
  readonly activatedAt: number;
  instance: Instance | null = null;
  state: LiveState = "activating";
  /** Past its wind-down deadline: serves in-flight work, refuses new requests. */
  closing = false;
  inflight = 0;
  readonly ready: Promise<void>;
  readonly input: InputGate;
  readonly output: OutputGate;
  private blocks: Promise<unknown> = Promise.resolve();
  private idleWaiters: (() => void)[] = [];

  constructor(private readonly deps: LiveInstanceDeps) {
    this.ns = deps.ns;
    this.id = deps.id;
    this.epoch = deps.epoch;
    this.epochValue = BigInt(deps.epoch);
    this.activatedAt = deps.now();
    const ref = { ns: deps.ns, id: deps.id };
    const onStale = (err: StaleEpochError) => deps.onStale(this, err);
    this.input = new InputGate({ storageHolds: !deps.gates.allowConcurrency, limit: deps.gates.maxQueuedEvents });
    this.output = new OutputGate((error) => deps.onBroken(this, error), !deps.gates.allowUnconfirmed);
    this.storage = new EpochStorage(
      deps.store,
      ref,
      deps.epoch,
      {
        onStale,
        afterDeleteAll: () => this.alarm.forget(),
        onRefused: (err) =>
          deps.log.warn("storage call refused, nothing written", { ns: this.ns, id: this.id, error: err.message }),
      },
      this.gates,
    );
    this.alarm = new InstanceAlarm({
      store: deps.store,
      ref,
      epoch: deps.epoch,
      run: (info) => this.runAlarm(info),
      onStale,
      lapsed: deps.lapsed,
      log: deps.log,
      now: deps.now,
    });
    this.ctx = new InstanceContextImpl(this);
    this.ready = this.activate();
    this.ready.catch(() => {});
  }

  private async activate(): Promise<void> {
    const { alarm } = await this.storeActivate();
    if (this.state === "retired") return;
    this.instance = runAs(new InstanceEvent("activation"), () => new this.deps.cls(this.ctx));
    await this.whenOpen();
    // Retirement can happen while the constructor's blockConcurrencyWhile runs.
    if ((this.state as LiveState) === "retired") return;
    this.state = "active";
    this.alarm.start(alarm);
  }

  /**
   * The store's activate, bounded by activationTimeoutMs: a store that does not answer (a Redis
   * that refuses connections retries for many seconds) fails the activation, naming the store.
   */
  private storeActivate(): Promise<{ alarm: number | null }> {
    const store = this.deps.store;
    const ms = this.deps.activationTimeoutMs;
    const activating = store.activate({ ns: this.ns, id: this.id }, this.epoch, { hostname: this.deps.hostname });
    activating.catch(() => {});
    let timer: ReturnType<typeof setTimeout> | undefined;
    const timeout = new Promise<never>((_, reject) => {
      timer = setTimeout(() => {
        const last = store.lastError;
        reject(
          new DurabilityUnavailableError(
            store.name ?? store.constructor.name,
            `no answer within ${ms} ms (activationTimeoutMs)${last ? `; last error: ${last}` : ""}`,
          ),
        );
      }, ms);
      timer.unref?.();
    });
    return Promise.race([activating, timeout]).finally(() => clearTimeout(timer));
  }

  /** Resolves once no blockConcurrencyWhile is pending. */
  async whenOpen(): Promise<void> {
    for (;;) {
      const blocks = this.blocks;
      await blocks;
      if (blocks === this.blocks) return;
    }
  }

  /** blockConcurrencyWhile: holds the input gate for `fn`'s run, whatever allowConcurrency says. */
  block<T>(fn: () => Promise<T>): Promise<T> {
    const result = this.input.hold(fn);
    this.blocks = Promise.all([this.blocks, result.catch(() => {})]);
    return result;
  }

  /**
   * Serves one request: delivered through the input gate, its answer held at the output gate
   * until the writes before it are durable (rejects with the failure if one failed).
   */
  async answer<T>(run: () => T, signal?: () => AbortSignal | undefined): Promise<Awaited<T>> {
    const answer = await this.deliver("request", run, signal);
    await this.output.confirmed();
    return answer;
  }

  /** Storage calls through the gates: reads wait at the input gate, writes also hold answers. */
  get gates(): StorageGates {
    return {
      read: (op) => this.input.read(op),
      write: (op) => this.output.track(this.input.write(op)),
      hold: (fn) => this.input.hold(fn),
    };
  }

  /**
   * Runs an event in the instance once the input gate lets it through, in order with the others.
   * Rejects with QueueFullError when `bounded` and the queue is full, DeliveryCancelledError when
   * `signal` aborts first or the activation retires.
   */
  async deliver<T>(
    kind: InstanceEvent["kind"],
    run: () => T,
    signal?: () => AbortSignal | undefined,
    bounded = true,
  ): Promise<T> {
    const event = new InstanceEvent(kind);
    const waiting = this.input.admit(event, signal, bounded);
    if (waiting) {
      await waiting;
      // It may have waited while the process was paused past its lease: another owner may serve now.
      if (!this.isCurrent()) throw new DeliveryCancelledError(this.state === "retired" ? "retired" : "lease-lapsed");
    }
    return runAs(event, run);
  }

  /** Not retired, and the worker's lease has not lapsed: this activation may still own the instance. */
  isCurrent(): boolean {
    return this.state !== "retired" && !this.deps.lapsed();
  }

  enter(): void {
    this.inflight++;
  }

  leave(): void {
    this.inflight--;
    if (this.inflight === 0) for (const wake of this.idleWaiters.splice(0)) wake();
  }

  /** True once nothing is in flight, false if `timeoutMs` passes first. */
  idle(timeoutMs: number): Promise<boolean> {
    if (this.inflight === 0) return Promise.resolve(true);
    return new Promise((resolve) => {
      const timer = setTimeout(() => resolve(false), timeoutMs);
      timer.unref?.();
      this.idleWaiters.push(() => {
        clearTimeout(timer);
        resolve(true);
      });
    });
  }

  /** Stops the timer and closes the sockets; in-flight work finishes on its own. */
  retire(code: number, reason: string): void {
    if (this.state === "retired") return;
    this.state = "retired";
    this.alarm.stop();
    this.input.cancelAll();
    for (const socket of this.sockets) socket.close(code, reason);
  }

  adopt(socket: PinnedWebSocket): void {
    this.sockets.add(socket);
    if (this.state === "retired") socket.close(1012, "instance moved");
  }

  private async runAlarm(info: AlarmInfo): Promise<void> {
    this.enter();
    try {
      await this.ready;
      await this.deliver("alarm", () => this.instance?.alarm?.(this.ctx, info), undefined, false);
      // The alarm counts as done only once what it wrote is durable: a failed write retries it.
      await this.output.confirmed();
    } finally {
      this.leave();
    }
  }

  readonly socketSink: SocketSink = {
    message: (socket, data) => {
      // No acquire checks the lease for a message, as it does for a request: one that arrives
      // once the lease lapsed may have another owner by now, so the client reconnects instead.
      if (!this.isCurrent()) return socket.close(1012, LEASE_LAPSED_CLOSE);
      this.hook("webSocketMessage", socket, true, () => this.instance?.webSocketMessage?.(socket, data, this.ctx));
    },
    close: (socket, code, reason) => {
      this.sockets.delete(socket);
      this.hook("webSocketClose", socket, false, () => this.instance?.webSocketClose?.(socket, code, reason, this.ctx));
    },
    error: (socket, error) => {
      if (this.instance?.webSocketError)
        this.hook("webSocketError", socket, false, () => this.instance?.webSocketError?.(socket, error, this.ctx));
      else this.deps.log.warn("websocket error", { ns: this.ns, id: this.id, error: String(error) });
    },
    confirmed: () => this.output.confirmed(),
  };

  /** Delivers a WebSocket event through the input gate; a full queue closes the socket (1013). */
  private hook(name: string, socket: PinnedWebSocket, bounded: boolean, call: () => unknown): void {
    this.deliver("websocket", call, undefined, bounded).then(
      () => {},
      (err: unknown) => {
        if (err instanceof QueueFullError) {
          this.deps.log.warn("instance queue full: websocket closed 1013", {
            ns: this.ns,
            id: this.id,
            limit: err.limit,
          });
          socket.close(1013, "instance overloaded");
          return;
        }
        if (err instanceof DeliveryCancelledError) {
          if (err.reason === "lease-lapsed") socket.close(1012, LEASE_LAPSED_CLOSE);
          return;
        }
        this.deps.log.error(`${name} failed`, {
          ns: this.ns,
          id: this.id,
          error: err instanceof Error ? err.message : String(err),
        });
      },
    );
  }
}
