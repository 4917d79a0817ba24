import type { z } from "zod";
import {
  type HealthReply,
  type NamespaceGroup,
  type OverviewReply,
  type StatsReply,
  type WorkersReply,
  type WorkerView,
  workerStatsView,
} from "./replies.ts";
import { bytes, type Column, NONE, relativeSeconds, renderPairs, renderTable, seconds, yesNo } from "./table.ts";

/**
 * Human renderings of the read routes' answers. `now` is the local clock in ms; the server's
 * times are Redis-clock ms, close enough for whole seconds.
 */

/** A namespace with its env in hostname-aware mode: /threads@prod. */
function namespaceLabel(worker: WorkerView, ns: string): string {
  const env = worker.envs[ns];
  return env === undefined ? ns : `${ns}@${env}`;
}

function workerColumns(now: number): Array<Column<WorkerView>> {
  return [
    { header: "SESSION", cell: (w) => w.sessionId },
    { header: "CLIENT", cell: (w) => w.clientId },
    { header: "HOSTNAME", cell: (w) => w.hostname ?? NONE },
    { header: "NAMESPACES", cell: (w) => w.namespaces.map((ns) => namespaceLabel(w, ns)).join(",") || NONE },
    { header: "HEADROOM", cell: (w) => String(w.headroom), align: "right" },
    { header: "DRAINING", cell: (w) => yesNo(w.draining) },
    { header: "DEGRADED", cell: (w) => (w.degradedSince === undefined ? NONE : relativeSeconds(w.degradedSince, now)) },
    { header: "EXPIRES-IN", cell: (w) => relativeSeconds(w.expiry, now, true), align: "right" },
  ];
}

export function renderWorkers(answer: WorkersReply, now: number): string {
  if (answer.workers.length === 0) return "no live workers";
  return renderTable(workerColumns(now), answer.workers);
}

interface PlacementRow {
  group: NamespaceGroup;
  id: string;
  sessionId: string;
  expiry?: number;
  tag?: string;
}

/**
 * Three sections: workers, bindings (hostname-aware mode only, when any), and the namespaces
 * with their placements. HOSTNAME and ENV columns appear only when the server reports them.
 */
export function renderOverview(answer: OverviewReply, now: number): string {
  const sections: string[] = [];
  sections.push(`WORKERS (${answer.workers.length})\n${renderWorkers({ workers: answer.workers }, now)}`);

  const bindings = Object.entries(answer.bindings.hostnames).sort(([a], [b]) => a.localeCompare(b));
  if (bindings.length > 0) {
    const rows = bindings.map(([key, env]) => ({ key, env, takeover: answer.bindings.envs[env] ?? NONE }));
    const table = renderTable(
      [
        { header: "HOSTNAME/NAMESPACE", cell: (r: (typeof rows)[number]) => r.key },
        { header: "ENV", cell: (r) => r.env },
        { header: "TAKEOVER", cell: (r) => r.takeover },
      ],
      rows,
    );
    sections.push(`BINDINGS (${rows.length})\n${table}`);
  }

  const aware = answer.namespaces.some((g) => g.hostname !== null || g.env !== null);
  const whereColumns = <Row>(groupOf: (row: Row) => NamespaceGroup): Array<Column<Row>> =>
    aware
      ? [
          { header: "HOSTNAME", cell: (row) => groupOf(row).hostname ?? NONE },
          { header: "ENV", cell: (row) => groupOf(row).env ?? NONE },
        ]
      : [];
  const nsColumns: Array<Column<NamespaceGroup>> = [
    { header: "NAMESPACE", cell: (g) => g.namespace },
    ...whereColumns<NamespaceGroup>((g) => g),
    { header: "WORKERS", cell: (g) => String(g.sessionIds.length), align: "right" },
    { header: "PLACEMENTS", cell: (g) => String(g.entries.length), align: "right" },
  ];
  sections.push(
    answer.namespaces.length === 0
      ? "NAMESPACES (0)\nno namespaces"
      : `NAMESPACES (${answer.namespaces.length})\n${renderTable(nsColumns, answer.namespaces)}`,
  );

  // Placements name their owner by clientId (sessions are 32 hex digits; --json keeps them);
  // an owner the answer does not list shows as the start of its session id.
  const clientOf = new Map(answer.workers.map((w) => [w.sessionId, w.clientId]));
  const placements: PlacementRow[] = answer.namespaces.flatMap((group) => group.entries.map((e) => ({ group, ...e })));
  const placementColumns: Array<Column<PlacementRow>> = [
    { header: "NAMESPACE", cell: (p) => p.group.namespace },
    ...whereColumns<PlacementRow>((p) => p.group),
    { header: "ID", cell: (p) => p.id },
    { header: "CLIENT", cell: (p) => clientOf.get(p.sessionId) ?? `session:${p.sessionId.slice(0, 8)}` },
    { header: "TAG", cell: (p) => p.tag ?? NONE },
    { header: "WIND-DOWN", cell: (p) => (p.expiry === undefined ? NONE : relativeSeconds(p.expiry, now)) },
  ];
  sections.push(
    placements.length === 0
      ? "PLACEMENTS (0)\nno live placements"
      : `PLACEMENTS (${placements.length})\n${renderTable(placementColumns, placements)}`,
  );
  return sections.join("\n\n");
}

/** A stats entry with the worker's own stats read as the table shows them. */
type StatsEntry = StatsReply["workers"][number] & { view?: z.infer<typeof workerStatsView> };

/** One row per worker from its own stats; "unreachable" (or the server's error) otherwise. */
export function renderStats(answer: StatsReply): string {
  if (answer.workers.length === 0) return "no live workers";
  const stats = (e: StatsEntry) => e.view;
  const sum = (e: StatsEntry, key: "inflight" | "sockets") => {
    const instances = stats(e)?.instances;
    return instances === undefined ? NONE : String(instances.reduce((n, i) => n + (i[key] ?? 0), 0));
  };
  const columns: Array<Column<StatsEntry>> = [
    { header: "SESSION", cell: (e) => e.sessionId },
    { header: "CLIENT", cell: (e) => e.clientId },
    { header: "HOSTNAME", cell: (e) => e.hostname ?? NONE },
    { header: "STATUS", cell: (e) => ("error" in e ? e.error : "ok") },
    {
      header: "INSTANCES",
      cell: (e) => (stats(e)?.instances === undefined ? NONE : String(stats(e)!.instances!.length)),
      align: "right",
    },
    { header: "INFLIGHT", cell: (e) => sum(e, "inflight"), align: "right" },
    { header: "SOCKETS", cell: (e) => sum(e, "sockets"), align: "right" },
    {
      header: "HEADROOM",
      cell: (e) => (stats(e)?.headroom === undefined ? NONE : String(stats(e)!.headroom)),
      align: "right",
    },
    { header: "DRAINING", cell: (e) => yesNo(stats(e)?.draining) },
    {
      header: "LEASE",
      cell: (e) => (stats(e)?.leaseHealthy === undefined ? NONE : stats(e)!.leaseHealthy ? "healthy" : "unhealthy"),
    },
    {
      header: "UPTIME",
      cell: (e) => (stats(e)?.process?.uptimeMs === undefined ? NONE : seconds(stats(e)!.process!.uptimeMs!)),
      align: "right",
    },
  ];
  const rows = answer.workers.map(
    (e): StatsEntry => ("stats" in e ? { ...e, view: workerStatsView.parse(e.stats) } : e),
  );
  return renderTable(columns, rows);
}

/**
 * The cold-start line, worded for what the next request will see. Each bucket's window (one
 * lease) opens at the first request in that bucket, so quarantineMs = 0 means either that no
 * bucket has opened one yet or that every opened one is past; the node's own resolutions tell
 * whether requests have reached the placement script through it at all.
 */
export function coldStart(answer: HealthReply): string {
  if (answer.quarantineMs > 0) {
    const seconds = Math.ceil(answer.quarantineMs / 1000);
    return `${seconds}s left in the longest open window (new placements in its bucket get 503 until then)`;
  }
  // The same words whether no bucket was used yet or every window closed: a dev store Pinboard
  // created never opens one, and the answer cannot tell the cases apart.
  return (
    "no window open (in a Redis Pinboard did not create, a bucket's first request opens one: " +
    "a lease of 503s for new placements there)"
  );
}

/**
 * The node's health. `ready` is its /readyz: a node that is not ready (Redis unreachable, no
 * fleet license, draining) reports a full lease of cold start it cannot actually know, so the
 * window shows as unknown rather than as a countdown.
 */
export function renderHealth(answer: HealthReply, ready: boolean): string {
  const pairs: Array<[string, string]> = [
    ["ready", ready ? "yes" : "no (GET /readyz answered 503)"],
    ["uptime", seconds(answer.uptimeMs)],
    ["connections", String(answer.connections)],
    ["cold start", ready ? coldStart(answer) : "unknown while the node is not ready"],
  ];
  if (answer.rssBytes !== undefined) pairs.push(["memory (rss)", bytes(answer.rssBytes)]);
  const outcomes = Object.entries(answer.resolutions).sort(([a], [b]) => a.localeCompare(b));
  const resolutions =
    outcomes.length === 0
      ? "no resolutions yet"
      : renderTable(
          [
            { header: "OUTCOME", cell: ([outcome]: [string, number]) => outcome },
            { header: "COUNT", cell: ([, count]) => String(count), align: "right" },
          ],
          outcomes,
        );
  return `${renderPairs(pairs)}\n\nRESOLUTIONS\n${resolutions}`;
}
