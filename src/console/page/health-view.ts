import type { z } from "zod";
import type { healthOk } from "../../api/answers.ts";
import type { Answer } from "./api.ts";
import { barChart, colorOf, type Sample } from "./chart.ts";
import { duration, h, render } from "./dom.ts";

/** GET /registry/health's answer (its schema, as a type only). */
export type Health = z.infer<typeof healthOk>;

type Outcome = keyof Health["resolutions"];

const REFUSALS: Outcome[] = [
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
];
const KEEP = 60;

interface HealthState {
  health: Answer<Health>;
  ready: boolean;
  serving: boolean | null;
  degraded: string[];
  ejected: string[];
}

/**
 * Fleet health: serving or not, ready or not, the cold-start window, refusals by outcome per
 * refresh (the counters are this node's since it started, so the chart shows their increase),
 * the degraded workers and the ejected ones.
 */
export class HealthView {
  private samples: Sample[] = [];
  private last: Health["resolutions"] | null = null;

  constructor(private readonly host: HTMLElement) {}

  update(state: HealthState): void {
    const health = state.health.body;
    if (state.health.status === 200 && health) this.sample(health.resolutions);
    const key = JSON.stringify([
      state.ready,
      state.serving,
      health?.quarantineMs,
      health?.resolutions,
      state.degraded,
      state.ejected,
      this.samples.length,
    ]);
    render(this.host, key, () => {
      const totals = health?.resolutions ?? {};
      const seen = REFUSALS.filter((o) => (totals[o] ?? 0) > 0);
      return h(
        "div",
        { class: "health" },
        facts(state, health),
        h("h3", {}, "Refusals per refresh"),
        seen.length === 0
          ? h("p", { class: "muted" }, "No refusals since this node started.")
          : barChart(this.samples, seen, "refusals per refresh, by outcome"),
        seen.length === 0
          ? null
          : h(
              "ul",
              { class: "legend" },
              ...seen.map((o) =>
                h(
                  "li",
                  {},
                  h("span", { class: "swatch", style: `background:${colorOf(o, seen)}` }),
                  `${o}: ${totals[o]}`,
                ),
              ),
            ),
        h("h3", {}, "Degraded workers"),
        state.degraded.length === 0
          ? h("p", { class: "muted" }, "None: every worker's last probe passed.")
          : h("ul", {}, ...state.degraded.map((w) => h("li", {}, w))),
        h("h3", {}, "Ejected workers"),
        state.ejected.length === 0
          ? h("p", { class: "muted" }, "None: no worker is kept from new placements for failing forwards.")
          : h("ul", {}, ...state.ejected.map((w) => h("li", {}, w))),
      );
    });
  }

  private sample(totals: Health["resolutions"]): void {
    const counts: Record<string, number> = {};
    for (const o of REFUSALS) counts[o] = this.last ? Math.max(0, (totals[o] ?? 0) - (this.last[o] ?? 0)) : 0;
    this.last = { ...totals };
    this.samples = [...this.samples, { at: Date.now(), counts }].slice(-KEEP);
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
