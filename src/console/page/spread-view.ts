import { h, render, table } from "./dom.ts";
import type { Worker } from "./fleet-order.ts";
import type { Spread } from "./fleet-view.ts";
import { count } from "./numbers.ts";
import { timeAgo } from "./time.ts";

/**
 * How placements spread over the workers (GET /registry/spread, counted inside Redis): one row
 * per worker, most placements first, each with a bar against the busiest, and the placements
 * whose owner is no longer live.
 */
export class SpreadView {
  constructor(private readonly host: HTMLElement) {}

  update(spread: Spread | null, workers: readonly Worker[], now: number): void {
    const key = JSON.stringify([spread?.workers, spread?.unowned, spread?.complete, workers.map((w) => w.sessionId)]);
    render(this.host, key, () => {
      if (!spread) return h("p", { class: "muted" }, "Not counted yet.");
      const clientOf = new Map(workers.map((w) => [w.sessionId, w.clientId]));
      const rows = [...spread.workers].sort(
        (a, b) => b.placements - a.placements || a.sessionId.localeCompare(b.sessionId),
      );
      const top = Math.max(1, ...rows.map((r) => r.placements));
      const total = rows.reduce((sum, r) => sum + r.placements, 0) + spread.unowned;
      return h(
        "div",
        {},
        h(
          "p",
          { class: "muted" },
          `${count(total)}${spread.complete ? "" : "+"} placements, counted `,
          timeAgo(spread.countedAt, now),
          spread.unowned > 0
            ? `; ${count(spread.unowned)} without a live owner (placed again on their next request)`
            : "",
          ".",
        ),
        table(
          ["Worker", "Placements", "Share"],
          rows.map((r) => [
            h("span", { class: "mono" }, clientOf.get(r.sessionId) ?? r.sessionId.slice(0, 8)),
            count(r.placements),
            h("meter", { min: "0", max: String(top), value: String(r.placements), title: share(r.placements, total) }),
          ]),
          "Placements per worker",
        ),
      );
    });
  }
}

function share(n: number, total: number): string {
  return total === 0 ? "0%" : `${((n / total) * 100).toFixed(1)}%`;
}
