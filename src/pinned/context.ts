import type { AttestationClaims } from "../contract/attestation.ts";
import type { LiveInstance } from "./live-instance.ts";
import type {
  AcceptedWebSocket,
  AcceptWebSocketOptions,
  InstanceContext,
  InstanceStorage,
  RequestContext,
} from "./types.ts";
import { acceptUpgrade, type PinnedWebSocket } from "./websocket.ts";

/** The ctx an instance object gets: bound to one activation, so to one epoch. */
export class InstanceContextImpl implements InstanceContext {
  constructor(protected readonly live: LiveInstance) {}

  get ns(): string {
    return this.live.ns;
  }
  get id(): string {
    return this.live.id;
  }
  get epoch(): string {
    return this.live.epoch;
  }
  get storage(): InstanceStorage {
    return this.live.storage;
  }

  isCurrent(): boolean {
    return this.live.isCurrent();
  }

  setAlarm(at: number | Date | null): Promise<void> {
    return this.live.alarm.set(at instanceof Date ? at.getTime() : at);
  }
  async getAlarm(): Promise<number | null> {
    return this.live.alarm.get();
  }
  deleteAlarm(): Promise<void> {
    return this.live.alarm.set(null);
  }

  acceptWebSocket(request: Request, options: AcceptWebSocketOptions = {}): AcceptedWebSocket {
    const accepted = acceptUpgrade(request, options, this.live.socketSink);
    this.live.adopt(accepted.socket);
    return accepted;
  }

  getWebSockets(tag?: string): PinnedWebSocket[] {
    const all = [...this.live.sockets].filter((s) => s.readyState <= 1);
    return tag === undefined ? all : all.filter((s) => s.tags.includes(tag));
  }

  blockConcurrencyWhile<T>(fn: () => Promise<T>): Promise<T> {
    return this.live.block(fn);
  }
}

export class RequestContextImpl extends InstanceContextImpl implements RequestContext {
  constructor(
    live: LiveInstance,
    readonly path: string,
    readonly attestation: AttestationClaims,
  ) {
    super(live);
  }
}
