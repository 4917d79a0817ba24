import { PINBOARD_VERSION } from "../contract/version.ts";
import type { InstanceTable } from "./instance-table.ts";
import type { Registration } from "./registration.ts";

export interface StatsSources {
  table: InstanceTable;
  registration: Registration;
  namespaces: readonly string[];
  draining(): boolean;
  headroom(): number;
  startedAt: number;
  now(): number;
}

/**
 * GET /_pinned/stats. Pinboard filters `namespaces` (keys) and `instances` (by their `ns`) to
 * what the calling operator may see; the rest is passed through.
 */
export function buildStats(s: StatsSources): Record<string, unknown> {
  const namespaces: Record<string, { instances: number; inflight: number; sockets: number }> = {};
  for (const ns of s.namespaces) namespaces[ns] = { instances: 0, inflight: 0, sockets: 0 };
  const instances = s.table.all().map((live) => {
    const entry = namespaces[live.ns];
    if (entry) {
      entry.instances++;
      entry.inflight += live.inflight;
      entry.sockets += live.sockets.size;
    }
    return {
      ns: live.ns,
      id: live.id,
      epoch: live.epoch,
      state: live.closing ? "closing" : live.state,
      inflight: live.inflight,
      // Of those, waiting at the input gate (a hot instance shows here before maxQueuedEvents refuses).
      queued: live.input.queued,
      sockets: live.sockets.size,
      alarm: live.alarm.get(),
      activatedAt: live.activatedAt,
    };
  });
  const r = s.registration;
  const proc = (globalThis as { process?: NodeJS.Process }).process;
  return {
    // The worker library's version: the operator console shows it on the worker's card.
    version: PINBOARD_VERSION,
    draining: s.draining(),
    leaseFlaps: r.lease.flaps,
    reregistrations: r.reregistrations,
    leaseHealthy: r.lease.healthy(),
    degraded: r.degraded,
    headroom: s.headroom(),
    process: {
      uptimeMs: proc ? Math.round(proc.uptime() * 1000) : s.now() - s.startedAt,
      rssBytes: proc ? proc.memoryUsage.rss() : 0,
    },
    namespaces,
    instances,
  };
}
