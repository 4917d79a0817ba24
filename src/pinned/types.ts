import type { AttestationClaims } from "../contract/attestation.ts";
import type { ListOptions } from "./durability.ts";
import type { PinnedWebSocket } from "./websocket.ts";

/** The key-value calls of ctx.storage and of a transaction's `txn`: JSON values by string key. */
export interface KeyValueCalls {
  get<T = unknown>(key: string): Promise<T | undefined>;
  get<T = unknown>(keys: string[]): Promise<Map<string, T>>;
  put<T>(key: string, value: T): Promise<void>;
  put<T>(entries: Record<string, T>): Promise<void>;
  /** Resolves with whether the key existed (the count, for many keys). */
  delete(key: string): Promise<boolean>;
  delete(keys: string[]): Promise<number>;
  list<T = unknown>(options?: ListOptions): Promise<Map<string, T>>;
}

/**
 * Durable storage of one instance, in the spirit of Durable Objects' storage API. Values are
 * JSON: whatever JSON.stringify keeps comes back from get. Every write is fenced by the epoch
 * the instance was activated at and rejects with StaleEpochError once a newer owner claimed
 * the instance.
 */
export interface InstanceStorage extends KeyValueCalls {
  /** Drops every key and the alarm. */
  deleteAll(): Promise<void>;
  /**
   * Runs `closure` with a transaction whose writes are buffered; its reads see its own writes.
   * When the closure resolves, every buffered put and delete is written in one fenced store call,
   * all or nothing, and transaction() resolves with the closure's value. When it throws, nothing
   * is written and transaction() rejects with its error. After `txn.rollback()` nothing is
   * written and transaction() settles as the closure does. A stale epoch at the commit rejects
   * with StaleEpochError (the instance is dropped, as for any fenced write). The instance's
   * input gate is held from the closure's start to the commit.
   */
  transaction<T>(closure: (txn: Transaction) => Promise<T>): Promise<T>;
}

/**
 * The `txn` of storage.transaction(): the storage calls, buffered until the commit; `delete`
 * answers whether the key existed as the transaction saw it.
 */
export interface Transaction extends KeyValueCalls {
  /** Nothing of this transaction will be written; later calls on it throw. */
  rollback(): void;
}

export interface AcceptWebSocketOptions {
  /** Labels for getWebSockets(tag). */
  tags?: string[];
}

export interface AcceptedWebSocket {
  socket: PinnedWebSocket;
  /** Return this from fetch to complete the upgrade. */
  response: Response;
}

/** What an instance knows about itself: given to its constructor and to alarm(). */
export interface InstanceContext {
  readonly ns: string;
  readonly id: string;
  /** The placement epoch this instance object was activated at (a decimal string). */
  readonly epoch: string;
  readonly storage: InstanceStorage;
  /**
   * False once this activation may no longer own the instance: it was retired (a newer epoch
   * arrived, a write was fenced, it was wound down) or the worker's lease lapsed, so Pinboard may
   * have placed the instance elsewhere. Storage writes are fenced whatever this says; check it
   * before an effect no fence guards (an answer built from memory after a long wait, a message
   * sent to another system), or quote `epoch` to that system as a fencing token (FencedRedis).
   */
  isCurrent(): boolean;
  /** Stores the alarm (due time in ms or a Date) with the instance; null clears it. */
  setAlarm(at: number | Date | null): Promise<void>;
  getAlarm(): Promise<number | null>;
  deleteAlarm(): Promise<void>;
  /**
   * Accepts a WebSocket upgrade of `request` (the request given to fetch). Only on Node, through
   * worker.listen() or a server built with createPinnedServer; throws TypeError otherwise or
   * when the request is not an upgrade.
   */
  acceptWebSocket(request: Request, options?: AcceptWebSocketOptions): AcceptedWebSocket;
  /** Open (or opening) sockets accepted by this instance, optionally only those with `tag`. */
  getWebSockets(tag?: string): PinnedWebSocket[];
  /** Holds every new request (and the activation itself) until `fn` settles. */
  blockConcurrencyWhile<T>(fn: () => Promise<T>): Promise<T>;
}

/** The context of one forwarded request. */
export interface RequestContext extends InstanceContext {
  /** The path after /{ns}/{id}, "" or starting with "/". */
  readonly path: string;
  /** The verified attestation: caller ({ns}/{id} of a calling instance), depth, acct. */
  readonly attestation: AttestationClaims;
}

export interface AlarmInfo {
  retryCount: number;
  isRetry: boolean;
}

export interface Instance {
  fetch(request: Request, ctx: RequestContext): Response | Promise<Response>;
  alarm?(ctx: InstanceContext, info: AlarmInfo): void | Promise<void>;
  webSocketMessage?(socket: PinnedWebSocket, message: string | ArrayBuffer, ctx: InstanceContext): void | Promise<void>;
  webSocketClose?(socket: PinnedWebSocket, code: number, reason: string, ctx: InstanceContext): void | Promise<void>;
  webSocketError?(socket: PinnedWebSocket, error: unknown, ctx: InstanceContext): void | Promise<void>;
}

export type InstanceClass = new (ctx: InstanceContext) => Instance;

export interface PinnedLogger {
  info(message: string, fields?: Record<string, unknown>): void;
  warn(message: string, fields?: Record<string, unknown>): void;
  error(message: string, fields?: Record<string, unknown>): void;
}
