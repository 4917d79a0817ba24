import type { z } from "zod";
import type { healthOk } from "../../api/answers.ts";
import { type Answer, explain } from "./api.ts";
import { barChart, type ChartSeries, seriesClass } from "./chart.ts";
import { duration, h, render } from "./dom.ts";
import { glance, glanceKey, type OverviewCount } from "./glance.ts";
import { perSecond, Series } from "./series.ts";
import type { Worker } from "./workers-view.ts";

/** GET /registry/health's answer (its schema, as a type only). */
export type Health = z.infer<typeof healthOk>;

type Outcome = keyof Health["resolutions"];

const REFUSALS = [
  "unknown-ns",
  "no-backends",
  "quarantine",
  "not-serving",
  "no-hostname-workers",
  "binding-quarantine",
  "takeover-pending",
  "env-conflict",
  "nack",
  "takeover-denied",
  "inflight",
] as const satisfies readonly Outcome[];
/** Every outcome, each with its own colour: forward first, then the refusals. */
const OUTCOMES = ["forward", ...REFUSALS] as const;
// Fails to compile when /registry/health gains an outcome this list lacks.
const everyOutcome: Exclude<Outcome, (typeof OUTCOMES)[number]> extends never ? true : never = true;
void everyOutcome;

/** The words shown for an outcome where its name would mislead. */
const LABELS: Partial<Record<Outcome, string>> = {
  quarantine: "cold start",
  "binding-quarantine": "binding displaced",
  inflight: "inflight cap",
};
const SERIES: ChartSeries[] = OUTCOMES.map((name, index) => ({ name, label: LABELS[name] ?? name, index }));
const KEEP = 60;

export interface HealthState {
  health: Answer<Health>;
  ready: boolean;
  serving: boolean | null;
  degraded: string[];
  ejected: string[];
  /** The live workers (/registry/workers), or why they are unknown. */
  workers: Worker[] | string;
  /** /registry/overview, or why it is unknown. */
  overview: OverviewCount | string;
}

/**
 * Fleet health: the fleet at a glance, serving or not, ready or not, the cold-start window,
 * resolutions per second by outcome (the counters are this node's since it started, so the
 * chart shows their increase, seeded with the average since the start), the degraded workers
 * and the ejected ones.
 */
export class HealthView {
  private readonly series = new Series(OUTCOMES, KEEP);

  constructor(private readonly host: HTMLElement) {}

  update(state: HealthState): void {
    const health = state.health.status === 200 ? state.health.body : null;
    if (health) this.series.add({ counts: health.resolutions, uptimeMs: health.uptimeMs });
    const totals: Health["resolutions"] = health?.resolutions ?? {};
    const glanceState = {
      workers: state.workers,
      overview: state.overview,
      latest: this.series.latest,
      refusals: { total: REFUSALS.reduce((sum, o) => sum + (totals[o] ?? 0), 0), outcomes: REFUSALS },
    };
    const key = JSON.stringify([
      state.ready,
      state.serving,
      health?.quarantineMs,
      health?.resolutions,
      state.degraded,
      state.ejected,
      this.series.taken,
      glanceKey(glanceState),
    ]);
    render(this.host, key, () =>
      h(
        "div",
        { class: "health" },
        glance(glanceState),
        facts(state, health),
        h("h3", {}, "Traffic: resolutions per second, by outcome"),
        ...this.traffic(state.health, totals),
        h("h3", {}, "Degraded workers"),
        state.degraded.length === 0
          ? h("p", { class: "muted" }, "None: every worker's last probe passed.")
          : h("ul", {}, ...state.degraded.map((w) => h("li", {}, w))),
        h("h3", {}, "Ejected workers"),
        state.ejected.length === 0
          ? h("p", { class: "muted" }, "None: no worker is kept from new placements for failing forwards.")
          : h("ul", {}, ...state.ejected.map((w) => h("li", {}, w))),
      ),
    );
  }

  /** The chart and its legend (totals since the start), or in words why there is none. */
  private traffic(answer: Answer<Health>, totals: Health["resolutions"]): Node[] {
    if (answer.status !== 200) return [h("p", { class: "refused" }, `Unknown: ${explain(answer)}`)];
    const seen = SERIES.filter((s) => (totals[s.name as Outcome] ?? 0) > 0);
    if (seen.length === 0)
      return [h("p", { class: "muted" }, "No traffic yet: this node has resolved no request since it started.")];
    const samples = this.series.samples;
    const drawn = samples.some((sample) => seen.some((s) => (sample.rates[s.name] ?? 0) > 0));
    const span = samples.reduce((sum, s) => sum + s.seconds, 0) * 1000;
    return [
      drawn
        ? barChart(samples, seen, "resolutions per second, by outcome", perSecond)
        : h("p", { class: "muted" }, `No traffic in the last ${duration(span)}.`),
      h(
        "ul",
        { class: "legend", "aria-label": "Resolutions since the node started" },
        ...seen.map((s) =>
          h(
            "li",
            {},
            h("span", { class: `swatch ${seriesClass(s.index)}` }),
            `${s.label}: ${totals[s.name as Outcome]}`,
          ),
        ),
      ),
    ];
  }
}

function facts(state: HealthState, health: Health | null): HTMLElement {
  const totals = health?.resolutions ?? {};
  return h(
    "dl",
    { class: "facts" },
    fact(
      "Serving",
      state.serving === null ? "unknown" : state.serving ? "yes" : "no — not the serving fleet",
      state.serving === false,
    ),
    fact("Ready (/readyz)", state.ready ? "yes" : "no", !state.ready),
    fact(
      "Cold start",
      health && health.quarantineMs > 0 ? `${duration(health.quarantineMs)} left: new placements wait` : "over",
      Boolean(health && health.quarantineMs > 0),
    ),
    fact("Forwards placed", String(totals.forward ?? 0), false),
    fact("Connections", String(health?.connections ?? "–"), false),
    fact("Up", health ? duration(health.uptimeMs) : "–", false),
  );
}

function fact(name: string, value: string, warn: boolean): DocumentFragment {
  const fragment = document.createDocumentFragment();
  fragment.append(h("dt", {}, name), h("dd", warn ? { class: "warn" } : {}, value));
  return fragment;
}
