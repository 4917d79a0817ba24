import type { z } from "zod";
import { REFUSAL_KINDS, type RefusalKind } from "../../metrics/refusal-kinds.ts";
import type { historyReply } from "../../operator/replies.ts";
import { type Answer, explain } from "./api.ts";
import { type ChartFrame, type ChartSeries, lines, seriesClass, stackedBars } from "./chart.ts";
import { h, render } from "./dom.ts";
import { perSecond } from "./numbers.ts";
import { duration } from "./time.ts";

/** GET /registry/history: this node's last 15 minutes in slots, oldest first (its schema, as a type only). */
export type History = z.infer<typeof historyReply>;

/** The words shown for a kind where its name would mislead. */
const LABELS: Partial<Record<RefusalKind, string>> = {
  quarantine: "cold start",
  "binding-quarantine": "binding displaced",
  inflight: "inflight cap",
  bad_gateway: "502 worker unreachable",
  upstream_timeout: "504 worker timeout",
};

/**
 * Why a credential whose claim is narrower than the whole fleet sees no traffic: the history
 * counts every tenant's requests, and GET /registry/history refuses it (403) as /metrics does.
 */
export const WHOLE_FLEET_ONLY =
  "This node's traffic counts the requests of every namespace, so only a credential over the whole fleet " +
  'sees it: namespaces "*", with no hostname or env restriction (as for /metrics). This credential\'s claim is narrower.';

/**
 * Live traffic from the node's own rolling history: forwards per second, refusals per second by
 * kind, and forward latency p50/p99, one slot per bar, in the viewer's local time.
 */
export class TrafficView {
  constructor(private readonly host: HTMLElement) {}

  update(answer: Answer<History>): void {
    const history = answer.status === 200 ? answer.body : null;
    render(this.host, JSON.stringify(history ?? explain(answer)), () =>
      history
        ? charts(history)
        : h("p", { class: "refused" }, answer.status === 403 ? WHOLE_FLEET_ONLY : `Unknown: ${explain(answer)}`),
    );
  }
}

/** Per second in each slot; the current slot counts only the part of it that has passed. */
function rates(history: History, count: (p: History["points"][number]) => number): number[] {
  return history.points.map((p) => {
    const seconds = Math.min(history.slotMs, Math.max(1000, history.now - p.at)) / 1000;
    return count(p) / seconds;
  });
}

function charts(history: History): HTMLElement {
  const frame = (label: string, format: (v: number) => string): ChartFrame => ({
    at: history.points.map((p) => p.at),
    slotMs: history.slotMs,
    label,
    format,
  });
  const kinds = refusalKinds(history);
  const refusals: ChartSeries[] = kinds.map((kind) => ({
    name: kind,
    label: LABELS[kind] ?? kind,
    index: colourOf(kind),
    values: rates(history, (p) => p.refusals[kind] ?? 0),
  }));
  const forwards = rates(history, (p) => p.forwards);
  const totalForwards = history.points.reduce((sum, p) => sum + p.forwards, 0);
  const span = duration(history.points.length * history.slotMs);
  return h(
    "div",
    { class: "traffic" },
    h(
      "p",
      { class: "muted" },
      `This node's last ${span}, one bar per ${duration(history.slotMs)}, in your local time.`,
    ),
    h("h3", {}, `Forwards per second (${totalForwards} in all)`),
    stackedBars(frame("forwards per second", perSecond), [
      { name: "forwards", label: "forwards/s", index: 1, values: forwards },
    ]),
    h("h3", {}, "Refusals per second, by kind"),
    kinds.length === 0
      ? h("p", { class: "muted" }, `None in the last ${span}.`)
      : stackedBars(frame("refusals per second, by kind", perSecond), refusals),
    legend(refusals, (s) =>
      String(history.points.reduce((sum, p) => sum + (p.refusals[s.name as RefusalKind] ?? 0), 0)),
    ),
    h("h3", {}, "Forward latency (ms)"),
    totalForwards === 0
      ? h("p", { class: "muted" }, `No forward in the last ${span}.`)
      : lines(frame("forward latency p50 and p99, ms", ms), [
          { name: "p50", label: "p50", index: 1, values: history.points.map((p) => p.p50Ms) },
          { name: "p99", label: "p99", index: 2, values: history.points.map((p) => p.p99Ms) },
        ]),
    totalForwards === 0
      ? null
      : legend(
          [
            { name: "p50", label: "p50", index: 1, values: [] },
            { name: "p99", label: "p99", index: 2, values: [] },
          ],
          () => "",
        ),
  );
}

function refusalKinds(history: History): RefusalKind[] {
  const seen = new Set<RefusalKind>();
  for (const p of history.points) for (const kind of REFUSAL_KINDS) if ((p.refusals[kind] ?? 0) > 0) seen.add(kind);
  return [...seen].sort((a, b) => colourOf(a) - colourOf(b) || a.localeCompare(b));
}

/** Forwards take colour 1; refusal kinds the others, by their place in the known list. */
function colourOf(kind: RefusalKind): number {
  return REFUSAL_KINDS.indexOf(kind) + 2;
}

function legend(series: readonly ChartSeries[], total: (s: ChartSeries) => string): HTMLElement | null {
  if (series.length === 0) return null;
  return h(
    "ul",
    { class: "legend" },
    ...series.map((s) => {
      const count = total(s);
      return h(
        "li",
        {},
        h("span", { class: `swatch ${seriesClass(s.index)}` }),
        count ? `${s.label}: ${count}` : s.label,
      );
    }),
  );
}

function ms(value: number): string {
  return value >= 100 ? value.toFixed(0) : value >= 10 ? value.toFixed(1) : value.toFixed(2);
}
