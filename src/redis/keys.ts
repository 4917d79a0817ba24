/**
 * Every Redis key name Pinboard uses. Keys that a placement script needs sit in the bucket's
 * hash slot (`{prefix}{{bucket}}:…`); fleet-wide keys sit in the `{global}` slot. The protocol fixes
 * the placement key: `{prefix}{{bucket}}:{env}:{ns}:placements`.
 */

import { sha256Head } from "./sha256.ts";

/** The env segment of keys in single (not hostname-aware) mode; `*` is never a valid env. */
export const SINGLE_ENV = "*";
/** The hostname of namespace lists in single mode: lists are keyed `{hostname}{ns}`. */
export const SINGLE_HOSTNAME = "";

export class Keys {
  constructor(
    readonly prefix: string,
    readonly shards: number,
  ) {}

  // ── fleet-wide: the {global} slot ─────────────────────────────────────────────────────────

  private global(name: string): string {
    return `${this.prefix}{global}:${name}`;
  }

  /** Hash sessionId → canonical worker record (JSON, with the account tag, auth/account-tags.ts, and the sealed secret, auth/worker-secrets.ts). */
  get sessions(): string {
    return this.global("sessions");
  }
  /** Zset sessionId → expiry (ms) over `sessions`: lets register prune the dead without reading every record. */
  get sessionExpiries(): string {
    return this.global("session-expiries");
  }
  /**
   * Hash sessionId → `{"a": account tag, "c": clientId}` (plus `"d": 1` once the session was seen
   * without a record): who registered each session, kept after its record is gone so that a
   * reclaim through prevSessionId can still be judged. Written by register, forgotten by register
   * a while after the record is gone (register-session.ts), bounded in count.
   */
  get sessionOwners(): string {
    return this.global("session-owners");
  }
  /** Zset sessionId → time (ms) at which register next looks at the `sessionOwners` entry. */
  get sessionOwnerChecks(): string {
    return this.global("session-owner-checks");
  }
  /** Counter of registrations: orders the bucket mirrors of one client's sessions. */
  get generation(): string {
    return this.global("generation");
  }
  /** Hash clientId → `accountTag\nsessionId` (the client's owner and its current session). */
  get clientOwners(): string {
    return this.global("clients");
  }
  /** Hash `{hostname}{ns}` → `env\nepoch` (hostname-aware bindings). */
  get hostnameBindings(): string {
    return this.global("bindings:hostnames");
  }
  /** Hash env → `takeover\nepoch`. */
  get envBindings(): string {
    return this.global("bindings:envs");
  }
  /** Hash `{hostname}{ns}` → time (ms) until which new placements there are quarantined. */
  get bindingQuarantine(): string {
    return this.global("bindings:quarantine");
  }
  /** String: the fleet license JSON, with a TTL of one lease. */
  get license(): string {
    return this.global("license");
  }
  /** Hash nodeId → member JSON with its own expiry. */
  get members(): string {
    return this.global("members");
  }
  /** Hash msgId → control message JSON for one session; expires two leases after its last touch. */
  queue(sessionId: string): string {
    return this.global(`queue:${sessionId}`);
  }
  /** Counter for control message ids. */
  get messageIds(): string {
    return this.global("msgids");
  }
  /** String: a client's drain config JSON; a timed drain expires 7 days past its deadline. */
  drain(clientId: string): string {
    return this.global(`drain:${clientId}`);
  }
  /** Hash sessionId → `consecutive failures \n ejections \n ejected-until ms` (outlier ejection). */
  get outliers(): string {
    return this.global("outliers");
  }
  /** String: set by the first sweep on a Redis; its absence means Redis lost everything. */
  get incarnation(): string {
    return this.global("incarnation");
  }
  /** String: the HSCAN cursor of a resurrection still paging in durable instances. */
  get resurrectCursor(): string {
    return this.global("resurrect");
  }
  /** String: where the orphan scan resumes, `bucket \n space \n cursor`. */
  get orphanCursor(): string {
    return this.global("orphan-cursor");
  }
  /** String with a TTL: the sweeper lease. */
  get sweeperLease(): string {
    return this.global("sweeper");
  }
  /**
   * Stream: the audit trail, operator actions and fleet events in one, newest last; capped at
   * PINBOARD_AUDIT_MAX_ENTRIES by `MAXLEN ~` on every append (src/audit/).
   */
  get audit(): string {
    return this.global("audit");
  }
  /**
   * Hash sessionId → ejected-until (ms): ejections the audit trail recorded whose end, the
   * worker's re-admission, it has not recorded yet.
   */
  get auditEjections(): string {
    return this.global("audit:ejections");
  }

  // ── per bucket: the {bucket} slot ─────────────────────────────────────────────────────────

  private bucket(bucket: number, name: string): string {
    return `${this.prefix}{${bucket}}:${name}`;
  }

  /** Hash field id → placement row, for one (env, namespace). */
  placements(bucket: number, env: string, ns: string): string {
    return this.bucket(bucket, `${env}:${ns}:placements`);
  }
  /** Hash sessionId → the bucket's mirror of the worker record (the same JSON: account tag, sealed secret). */
  workers(bucket: number): string {
    return this.bucket(bucket, "workers");
  }
  /** Zset sessionId → expiry (ms) over the bucket's mirrors, for pruning. */
  workerExpiries(bucket: number): string {
    return this.bucket(bucket, "worker-expiries");
  }
  /** Hash clientId → `sessionId\ngeneration`: which session of a client this bucket mirrors. */
  clients(bucket: number): string {
    return this.bucket(bucket, "clients");
  }
  /** The namespace list: hash sessionId → `expiry \n headroom \n flags` of workers serving `{hostname}{ns}`. */
  nsWorkers(bucket: number, hostname: string, ns: string): string {
    return this.bucket(bucket, `nsw:${hostname}${ns}`);
  }
  /** Zset sessionId → expiry (ms) over the namespace list: finds dead, expiring and random live entries in O(log n). */
  nsExpiries(bucket: number, hostname: string, ns: string): string {
    return this.bucket(bucket, `nse:${hostname}${ns}`);
  }
  /**
   * Hash summarising the namespace list: `n` and `sum` (count and headroom total of unflagged
   * entries), `v` (bumped whenever the candidate set may have grown) and `a:{slot}` (cached
   * rendezvous winners, `sessionId \n v \n valid-until`).
   */
  nsSummary(bucket: number, hostname: string, ns: string): string {
    return this.bucket(bucket, `nss:${hostname}${ns}`);
  }
  /** The three keys of one namespace list, in the order the scripts take them. */
  nsListKeys(bucket: number, hostname: string, ns: string): [list: string, expiries: string, summary: string] {
    return [
      this.nsWorkers(bucket, hostname, ns),
      this.nsExpiries(bucket, hostname, ns),
      this.nsSummary(bucket, hostname, ns),
    ];
  }
  /** The bucket's namespace lists that a worker belongs to, three keys each (nsListKeys), in namespace order. */
  nsListKeysFor(bucket: number, hostname: string, namespaces: readonly string[]): string[] {
    return namespaces.flatMap((ns) => this.nsListKeys(bucket, hostname, ns));
  }
  /** String: first time (ms) this bucket was touched; drives the cold-start quarantine. */
  bootTime(bucket: number): string {
    return this.bucket(bucket, "boot_time");
  }
  /** String: the last placement epoch minted in this bucket. */
  epoch(bucket: number): string {
    return this.bucket(bucket, "epoch");
  }
  /** Hash `{env}\n{ns}\n{id}` → epoch at which the id was re-placed after an overwrite. */
  overwritten(bucket: number): string {
    return this.bucket(bucket, "overwritten");
  }
  /** Set of `{env}\n{ns}` pairs that have a placements hash in this bucket. */
  spaces(bucket: number): string {
    return this.bucket(bucket, "spaces");
  }

  /**
   * Hash sessionId → `headroomRev \n count`: the new placements of the session made in this
   * bucket since its headroom was last replaced (register or heartbeat, revision `headroomRev` of
   * the record). The record's headroom less the sum over every bucket is what /registry/workers
   * shows; a count under another revision belongs to a replaced headroom and counts for nothing.
   */
  spent(bucket: number): string {
    return this.bucket(bucket, "spent");
  }

  /** Hash sessionId → time (ms) until which the worker is ejected from new placements. */
  ejected(bucket: number): string {
    return this.bucket(bucket, "ejected");
  }

  /** Hash `{env}\n{ns}\n{id}` → durability-sweep state of an overwritten id (attempts, next, parked). */
  wakes(bucket: number): string {
    return this.bucket(bucket, "wakes");
  }

  /** String: the HSCAN cursor of `overwritten` where the durability sweep's next page starts (absent: at 0). */
  wakeCursor(bucket: number): string {
    return this.bucket(bucket, "wake-cursor");
  }

  /** Every bucket number, 0 … shards-1. */
  allBuckets(): number[] {
    return Array.from({ length: this.shards }, (_, i) => i);
  }

  /**
   * The bucket of an id: the first 8 hex digits of sha256(id), mod shards. Synchronous (sha256.ts):
   * a register hashes every instance it names, a resolve one id.
   */
  bucketOf(id: string): number {
    return sha256Head(id) % this.shards;
  }
}
