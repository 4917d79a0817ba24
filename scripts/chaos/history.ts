/**
 * What a chaos run records, and what the checker (checker.ts) judges. Times are milliseconds on
 * the harness's clock (Date.now() of the process that ran the workload); the workers' own logs
 * are read back and put on the same clock (every process runs on this machine).
 */

import type { AlarmHistory } from "./history-alarms.ts";
import type { SocketHistory } from "./history-sockets.ts";
import type { Layer, LayerRefusal } from "./layers.ts";

/** One client operation through a Pinboard node, as the client saw it. */
export interface Operation {
  /** Unique per run. */
  id: number;
  /** The instance key, e.g. "/lists/k7". */
  key: string;
  kind: "append" | "read" | "incr";
  /** append: the unique value appended. */
  value?: string;
  /** Which Pinboard node the request went through (0 or 1). */
  node: number;
  start: number;
  end: number;
  /**
   * ok: the worker answered 200 (an append is acknowledged); fail: a definite refusal (4xx/5xx
   * from Pinboard or the worker, nothing was written); info: no answer or a cut connection (it
   * may or may not have taken effect).
   */
  outcome: "ok" | "fail" | "info";
  /** read: the list the worker returned; incr: the counter after the increment. */
  list?: string[];
  counter?: number;
  /** The placement epoch the answer carried (the worker echoes ctx.epoch). */
  epoch?: string;
  /** The worker (its CLIENT_ID) that answered. */
  worker?: string;
  /** Not ok: the status and Pinboard's {"error"} (or the worker's words), or why no answer came. */
  error?: string;
}

/** One fault the scheduler injected, and when it was healed. */
export interface Fault {
  kind:
    | "kill-worker"
    | "pause-worker"
    | "proxy-pinboard-redis"
    | "proxy-pinboard-worker"
    | "proxy-worker-store"
    | "redis-restart-empty"
    | "cluster-failover"
    | "kill-pinboard"
    | "pause-worker-edge"
    | "clock-skew"
    | "clock-rate"
    | "clock-rate-past-margin"
    | "proxy-heal-inflight"
    | "drain-worker"
    | "wind-down-keys"
    | "wind-down-namespace";
  /** What it hit: a worker's CLIENT_ID, a proxy's name, a node index. */
  target: string;
  /** drop, delay, blackhole, reset for proxy faults. */
  mode?: string;
  start: number;
  /** When it was healed (the process restarted or resumed, the proxy back to pass). */
  healed: number;
  /** The keys whose owner it hit (kill-worker, pause-worker): their recovery is measured. */
  keys?: string[];
  /** Faults the nemesis held at once (an overlapping pair) share this number. */
  overlap?: number;
  /**
   * pause-worker-edge: when the pause ended after the end of the worker's own lease view (its
   * last renewal sent + TTL × 0.95), ms; negative: before it. And the pause's length.
   */
  leaseEdgeMs?: number;
  /** pause-worker-edge: the leaseEdgeMs it aimed at (−500 to +500): the difference is the harness's aim. */
  leaseEdgeAimMs?: number;
  pauseMs?: number;
  /** Clock faults: the worker clock's rate during the fault, and its step (ms) at the start. */
  clockRate?: number;
  clockStepMs?: number;
  /** proxy-heal-inflight: the chunks held (requests and answers waiting) when the link healed. */
  heldChunks?: number;
}

/**
 * A worker's own log line for one served request: the instance key, the epoch its instance object
 * held, and when it served. Two workers serving one key at overlapping epochs is a violation.
 */
export interface Served {
  worker: string;
  key: string;
  epoch: string;
  /** When the worker began handling the request (its instance's fetch was called). */
  start?: number;
  /** When it had served it (a write: once the store took it). */
  at: number;
  kind: Operation["kind"];
}

/** A write the "user database" (a separate Redis, through FencedRedis) refused or took. */
export interface UserDbWrite {
  worker: string;
  key: string;
  /** The epoch as quoted (zero-padded per worker: the fence compares numerically). */
  epoch: string;
  /** When the write was sent. */
  start?: number;
  at: number;
  accepted: boolean;
  /** Set when no answer came (a lost connection): taken or not, nobody knows; `accepted` is false. */
  error?: string;
}

export interface History {
  operations: Operation[];
  faults: Fault[];
  served: Served[];
  userDb: UserDbWrite[];
  /** The final read of every key, after all faults healed, through a Pinboard node. */
  finalReads: Record<string, string[]>;
  /** The keys whose final read was never served (run.ts gives up after 60 s). */
  unserved?: string[];
  /** The lease TTL the run used: a key must be served again within lease + 2 s of its owner's death. */
  leaseTtlMs: number;
  started: number;
  ended: number;
  /** Why the nemesis stopped injecting early, if it did: the run then fails whatever the verdict. */
  nemesisFailure?: string;
  /** The workers log every answer before it leaves (sync-log.ts): an ok answer missing from `served` is a violation. */
  answersLogged?: boolean;
  /** What the stores held at the end, read from Redis directly (read-stores.ts). */
  stored?: StoredState;
  /** The protection layers kept on (layers.ts), and each refusal they logged. */
  layers?: Layer[];
  refusals?: LayerRefusal[];
  /** The WebSocket sessions (history-sockets.ts), when the run had them. */
  sockets?: SocketHistory;
  /** The alarms set and fired (history-alarms.ts), when the run had them. */
  alarms?: AlarmHistory;
}

/** The stores' contents after every fault healed, read from Redis, not through anyone's log. */
export interface StoredState {
  /** The user database's `user:{key}` lists, by instance key ("/lists/u0"). */
  userDb: Record<string, string[]>;
  /** The durability store's `list` value of each list instance, by instance key. */
  lists: Record<string, string[]>;
  /** The durability store's `n` value of each counter instance, by instance key. */
  counters: Record<string, number>;
}
