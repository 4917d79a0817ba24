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

  /** A storage write like any other: through the input and output gates. */
  setAlarm(at: number | Date | null): Promise<void> {
    const due = at instanceof Date ? at.getTime() : at;
    return this.live.gates.write(() => this.live.alarm.set(due));
  }
  async getAlarm(): Promise<number | null> {
    return this.live.alarm.get();
  }
  deleteAlarm(): Promise<void> {
    return this.setAlarm(null);
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
