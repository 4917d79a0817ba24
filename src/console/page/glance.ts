import { h } from "./dom.ts";
import type { Worker } from "./fleet-order.ts";
import type { FleetState, Spread } from "./fleet-view.ts";
import { count, perSecond } from "./numbers.ts";
import { duration, timeAgo } from "./time.ts";
import type { History } from "./traffic-view.ts";

/** What /registry/health and /readyz say about this node. */
export interface NodeFacts {
  serving: boolean | null;
  ready: boolean;
  /** The cold start left (ms), null when unknown. */
  quarantineMs: number | null;
}

/**
 * The fleet's totals on top of the landing page: workers (and how many drain, are degraded or
 * ejected), placements (counted in Redis), forwards and refusals per second with the p99 of the
 * last full slot of this node's history, and whether this node serves. `historyRefused`: the
 * credential is narrower than the whole fleet, which the history is kept for (WHOLE_FLEET_ONLY).
 */
export function glance(
  fleet: FleetState,
  history: History | null,
  node: NodeFacts,
  historyRefused = false,
): HTMLElement {
  const workers = typeof fleet.workers === "string" ? null : fleet.workers;
  const minute = lastMinute(history);
  const missing = historyRefused ? "whole-fleet credentials only" : "";
  return h(
    "dl",
    { class: "glance", "aria-label": "The fleet at a glance" },
    workers
      ? item("workers", "Workers", String(workers.length), workerDetail(workers, fleet.now))
      : item("workers", "Workers", "–", String(fleet.workers)),
    placementsItem(fleet.spread, fleet.now),
    item(
      "forwards",
      "Forwards/s",
      minute ? perSecond(minute.forwards / minute.seconds) : "–",
      minute?.p99Ms != null ? `last minute; p99 up to ${minute.p99Ms} ms` : missing || "last minute",
    ),
    item(
      "refusals",
      "Refusals/s",
      minute ? perSecond(minute.refusals / minute.seconds) : "–",
      history
        ? `last minute; ${count(totalRefusals(history))} in ${duration(history.points.length * history.slotMs)}`
        : missing,
      (minute?.refusals ?? 0) > 0,
    ),
    item("node", "This node", nodeWord(node), nodeDetail(node), node.serving === false || !node.ready),
  );
}

function workerDetail(list: readonly Worker[], now: number): string {
  const draining = list.filter((w) => w.draining).length;
  const degraded = list.filter((w) => w.degradedSince !== undefined).length;
  const ejected = list.filter((w) => w.ejectedUntil !== undefined && w.ejectedUntil > now).length;
  return `live; ${draining} draining, ${degraded} degraded, ${ejected} ejected`;
}

function placementsItem(spread: Spread | null, now: number): HTMLElement {
  if (!spread) return item("placements", "Placements", "–", "not counted");
  const total = spread.workers.reduce((sum, w) => sum + w.placements, 0) + spread.unowned;
  const detail = h(
    "span",
    {},
    spread.complete ? "" : "counted in part; ",
    spread.unowned > 0 ? `${count(spread.unowned)} without a live owner; ` : "",
    "counted ",
    timeAgo(spread.countedAt, now),
  );
  return item("placements", "Placements", `${count(total)}${spread.complete ? "" : "+"}`, detail);
}

const MINUTE_SLOTS = 6;

/** The last minute of this node's history (the current slot as far as it went): counts, seconds, worst p99. */
function lastMinute(history: History | null) {
  const points = history?.points.slice(-MINUTE_SLOTS) ?? [];
  if (!history || points.length === 0) return null;
  const seconds = Math.max(1, (history.now - points[0]!.at) / 1000);
  const forwards = points.reduce((sum, p) => sum + p.forwards, 0);
  const refusals = points.reduce((sum, p) => sum + Object.values(p.refusals).reduce((a, b) => a + b, 0), 0);
  const p99s = points.map((p) => p.p99Ms).filter((v): v is number => v !== null);
  return { forwards, refusals, seconds, p99Ms: p99s.length > 0 ? Math.max(...p99s) : null };
}

function totalRefusals(history: History): number {
  return history.points.reduce((sum, p) => sum + Object.values(p.refusals).reduce((a, b) => a + b, 0), 0);
}

function nodeWord(node: NodeFacts): string {
  if (node.serving === false) return "not serving";
  return node.ready ? "ready" : "not ready";
}

function nodeDetail(node: NodeFacts): string {
  const serving = node.serving === null ? "serving unknown" : node.serving ? "serving" : "not the serving fleet";
  const cold = node.quarantineMs ? `; cold start: ${duration(node.quarantineMs)} left` : "";
  return `${serving}${cold}`;
}

function item(id: string, name: string, value: string, detail: Node | string, warn = false): HTMLElement {
  return h(
    "div",
    { id: `glance-${id}` },
    h("dt", {}, name),
    h("dd", warn ? { class: "warn" } : {}, h("span", { class: "count" }, value), " ", h("small", {}, detail)),
  );
}
