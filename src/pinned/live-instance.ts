import { InstanceAlarm } from "./alarms.ts";
import { InstanceContextImpl } from "./context.ts";
import { type DurabilityStore, DurabilityUnavailableError, type StaleEpochError } from "./durability.ts";
import { EpochStorage } from "./storage.ts";
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
}

/** How long an activation waits for the durability store by default (createWorker's activationTimeoutMs). */
export const DEFAULT_ACTIVATION_TIMEOUT_MS = 5000;

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
  private gate: Promise<unknown> = Promise.resolve();
  private idleWaiters: (() => void)[] = [];

  constructor(private readonly deps: LiveInstanceDeps) {
    this.ns = deps.ns;
    this.id = deps.id;
    this.epoch = deps.epoch;
    this.epochValue = BigInt(deps.epoch);
    this.activatedAt = deps.now();
    const ref = { ns: deps.ns, id: deps.id };
    const onStale = (err: StaleEpochError) => deps.onStale(this, err);
    this.storage = new EpochStorage(deps.store, ref, deps.epoch, {
      onStale,
      afterDeleteAll: () => this.alarm.forget(),
    });
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
    this.instance = new this.deps.cls(this.ctx);
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
      const gate = this.gate;
      await gate;
      if (gate === this.gate) return;
    }
  }

  block<T>(fn: () => Promise<T>): Promise<T> {
    const result = fn();
    this.gate = Promise.all([this.gate, result.catch(() => {})]);
    return result;
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
      await this.whenOpen();
      await this.instance?.alarm?.(this.ctx, info);
    } finally {
      this.leave();
    }
  }

  readonly socketSink: SocketSink = {
    message: (socket, data) =>
      this.hook("webSocketMessage", () => this.instance?.webSocketMessage?.(socket, data, this.ctx)),
    close: (socket, code, reason) => {
      this.sockets.delete(socket);
      this.hook("webSocketClose", () => this.instance?.webSocketClose?.(socket, code, reason, this.ctx));
    },
    error: (socket, error) => {
      if (this.instance?.webSocketError)
        this.hook("webSocketError", () => this.instance?.webSocketError?.(socket, error, this.ctx));
      else this.deps.log.warn("websocket error", { ns: this.ns, id: this.id, error: String(error) });
    },
  };

  private hook(name: string, call: () => void | Promise<void> | undefined): void {
    const fail = (err: unknown) =>
      this.deps.log.error(`${name} failed`, {
        ns: this.ns,
        id: this.id,
        error: err instanceof Error ? err.message : String(err),
      });
    try {
      const result = call();
      if (result && typeof (result as Promise<void>).then === "function") (result as Promise<void>).catch(fail);
    } catch (err) {
      fail(err);
    }
  }
}
