import { h } from "./dom.ts";
import { perSecond, type Sample } from "./series.ts";
import type { Worker } from "./workers-view.ts";

/**
 * The fleet at a glance, on top of the landing tab: live workers (and how many drain), live
 * placements, forwards per second and refusals. Each comes from a route the console calls
 * anyway: /registry/workers, /registry/overview and /registry/health.
 */

/** What /registry/overview answers that the count needs. */
export interface OverviewCount {
  namespaces: Array<{ entries: unknown[] }>;
  /** Present when the walk stopped before the end: there are more placements than counted. */
  cursor?: string;
}

export interface GlanceState {
  /** The live workers, or why they are unknown. */
  workers: Worker[] | string;
  /** The overview, or why it is unknown. */
  overview: OverviewCount | string;
  /** The latest rates (per second, by outcome), none before the first health answer. */
  latest: Sample | undefined;
  /** Refusals by outcome since the node started. */
  refusals: { total: number; outcomes: readonly string[] };
}

/** What the glance shows, as a key: it is redrawn only when this changes. */
export function glanceKey(state: GlanceState): unknown {
  const workers = typeof state.workers === "string" ? state.workers : state.workers.map((w) => w.draining);
  const overview =
    typeof state.overview === "string" ? state.overview : [placements(state.overview), state.overview.cursor];
  return [workers, overview, state.latest, state.refusals.total];
}

export function glance(state: GlanceState): HTMLElement {
  const latest = state.latest;
  const refusalRate = latest ? state.refusals.outcomes.reduce((sum, o) => sum + (latest.rates[o] ?? 0), 0) : 0;
  const when = !latest
    ? "unknown: no health answer yet"
    : latest.seed
      ? "average since the node started"
      : `over the last ${Math.round(latest.seconds)} s`;
  return h(
    "dl",
    { class: "glance", "aria-label": "The fleet at a glance" },
    typeof state.workers === "string"
      ? item("workers", "Workers", "–", state.workers)
      : item(
          "workers",
          "Workers",
          String(state.workers.length),
          `live, ${state.workers.filter((w) => w.draining).length} draining`,
        ),
    typeof state.overview === "string"
      ? item("placements", "Placements", "–", state.overview)
      : item(
          "placements",
          "Placements",
          `${placements(state.overview)}${state.overview.cursor ? "+" : ""}`,
          state.overview.cursor ? "live, counted in part (a long walk)" : "live",
        ),
    item("forwards", "Forwards/s", latest ? perSecond(latest.rates.forward ?? 0) : "–", when),
    item(
      "refusals",
      "Refusals",
      String(state.refusals.total),
      `since the node started; ${perSecond(refusalRate)}/s ${latest?.seed ? "on average" : "lately"}`,
      // Refusing now, not on average since the start.
      refusalRate > 0 && latest?.seed === false,
    ),
  );
}

function placements(overview: OverviewCount): number {
  return overview.namespaces.reduce((sum, g) => sum + g.entries.length, 0);
}

function item(id: string, name: string, value: string, detail: string, warn = false): HTMLElement {
  return h(
    "div",
    { id: `glance-${id}` },
    h("dt", {}, name),
    h("dd", warn ? { class: "warn" } : {}, h("span", { class: "count" }, value), " ", h("small", {}, detail)),
  );
}
