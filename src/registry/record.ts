import { SINGLE_ENV } from "../redis/keys.ts";

export type Takeover = "wind_down" | "deny";

/**
 * A worker's registration as stored in Redis (fleet-wide and mirrored into every bucket).
 * Times are Redis-clock milliseconds. `secret` and `account` never leave through a read route.
 */
export interface WorkerRecord {
  sessionId: string;
  clientId: string;
  account: string;
  /** Sealed (auth/worker-secrets.ts); `deps.secrets.open` gives the worker's secret. */
  secret: string;
  advertiseUrl: string;
  namespaces: string[];
  /** "" in single mode. */
  hostname: string;
  /** The default env ("*" in single mode); `envs` overrides it per namespace. */
  env: string;
  envs: Record<string, string>;
  takeover: Takeover;
  /** Hostname-aware binding epoch, decimal digits. */
  bindingEpoch: string;
  /**
   * The headroom of the last register or heartbeat, as stored. New placements since are counted
   * per bucket (keys.ts `spent`); the read routes show this less their sum (registry/headroom.ts).
   */
  headroom: number;
  /**
   * The revision (`rev`) at which a heartbeat last replaced `headroom`; absent (0) for the
   * registration's. Placements counted under another revision belong to a replaced headroom.
   */
  headroomRev?: number;
  /** The worker's own draining flag. */
  selfDraining: boolean;
  /** selfDraining OR an operator drain. */
  draining: boolean;
  degradedSince?: number;
  expiry: number;
  registeredAt: number;
  /** Registration generation: orders the bucket mirrors of one client's sessions. */
  gen: number;
  /**
   * Revision of this record, bumped by every fleet-wide write (register, heartbeat, drain): a
   * bucket never replaces its mirror with an older revision, so writes that race settle on the
   * latest one.
   */
  rev?: number;
}

export function parseRecord(json: string): WorkerRecord {
  const raw = JSON.parse(json) as WorkerRecord & { envs: unknown; degradedSince?: unknown };
  // cjson turns an empty object into {} but may hand back [] for one it decoded and re-encoded.
  const envs = raw.envs && !Array.isArray(raw.envs) ? (raw.envs as Record<string, string>) : {};
  const degradedSince = typeof raw.degradedSince === "number" ? raw.degradedSince : undefined;
  return { ...raw, envs, degradedSince };
}

/** The env a worker serves a namespace under. */
export function envOf(record: Pick<WorkerRecord, "env" | "envs">, ns: string): string {
  return record.envs[ns] ?? record.env ?? SINGLE_ENV;
}
