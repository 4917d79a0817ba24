/**
 * What a chaos run records, and what the checker (checker.ts) judges. Times are milliseconds on
 * the harness's clock (Date.now() of the process that ran the workload); the workers' own logs
 * are read back and put on the same clock (every process runs on this machine).
 */

import type { AlarmHistory } from "./history-alarms.ts";
import type { SocketHistory } from "./history-sockets.ts";

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
  epoch: string;
  at: number;
  accepted: boolean;
}

export interface History {
  operations: Operation[];
  faults: Fault[];
  served: Served[];
  userDb: UserDbWrite[];
  /** The final read of every key, after all faults healed, through a Pinboard node. */
  finalReads: Record<string, string[]>;
  /** The lease TTL the run used: a key must be served again within lease + 2 s of its owner's death. */
  leaseTtlMs: number;
  started: number;
  ended: number;
  /** Why the nemesis stopped injecting early, if it did: the run then fails whatever the verdict. */
  nemesisFailure?: string;
  /** The WebSocket sessions (history-sockets.ts), when the run had them. */
  sockets?: SocketHistory;
  /** The alarms set and fired (history-alarms.ts), when the run had them. */
  alarms?: AlarmHistory;
}
