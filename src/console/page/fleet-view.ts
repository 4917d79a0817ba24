import type { z } from "zod";
import type { spreadReply } from "../../operator/replies.ts";
import { h, render, term } from "./dom.ts";
import { type CardState, cardState, meanHeadroom, sortFleet, type Worker, type WorkerStats } from "./fleet-order.ts";
import { count } from "./numbers.ts";
import { relative, timeAgo } from "./time.ts";
import { actOnWorker, type WorkerActionKind } from "./worker-actions.ts";

/** GET /registry/spread: placements per live session, counted in Redis (its schema, as a type only). */
export type Spread = z.infer<typeof spreadReply>;

export interface FleetState {
  /** The live workers, or why they are unknown. */
  workers: Worker[] | string;
  spread: Spread | null;
  stats: ReadonlyMap<string, WorkerStats>;
  /** Raw stats JSON of the workers whose "Stats" was opened. */
  details: ReadonlyMap<string, string>;
  now: number;
}

const STATE_WORDS: Record<CardState, string> = {
  ejected: "ejected",
  degraded: "degraded",
  unreachable: "stats unreachable",
  "lease-short": "lease running out",
  draining: "draining",
  ok: "serving",
};

/**
 * The fleet at a glance: one card per live worker, trouble first (ejected, degraded, stats
 * unreachable, lease running out, draining), each with its placements, headroom against the
 * fleet's mean, inflight and open WebSockets, lease left and version, and drain / undrain.
 */
export class FleetView {
  constructor(
    private readonly host: HTMLElement,
    private readonly answers: HTMLElement,
    private readonly onAction: () => void,
    private readonly onStats: (worker: Worker) => void,
  ) {}

  update(state: FleetState): void {
    const key = JSON.stringify([
      typeof state.workers === "string"
        ? state.workers
        : state.workers.map((w) => [w, Math.round((w.expiry - state.now) / 1000)]),
      state.spread?.workers,
      [...state.stats],
      [...state.details],
    ]);
    render(this.host, key, () => {
      if (typeof state.workers === "string") return h("p", { class: "refused" }, state.workers);
      if (state.workers.length === 0) return noWorkers();
      const placements = new Map(state.spread?.workers.map((w) => [w.sessionId, w.placements]));
      const mean = meanHeadroom(state.workers);
      const sorted = sortFleet(state.workers, state.stats, state.now);
      return h(
        "div",
        { class: "cards" },
        ...sorted.map((w) => this.card(w, { placements: placements.get(w.sessionId), mean, ...state })),
      );
    });
  }

  private card(w: Worker, c: FleetState & { placements: number | undefined; mean: number }): HTMLElement {
    const stats = c.stats.get(w.sessionId);
    const state = cardState(w, stats, c.now);
    const live = stats?.reachable ? stats : null;
    return h(
      "article",
      { class: `card state-${state}`, "aria-label": `Worker ${w.clientId}`, "data-session": w.sessionId },
      h(
        "header",
        {},
        h("h3", { class: "mono" }, w.clientId),
        h("span", { class: `badge state-${state}` }, stateDetail(w, state, c.now)),
      ),
      h("p", { class: "muted where" }, hostOf(w.advertiseUrl), " · ", w.namespaces.join(", ")),
      h(
        "dl",
        { class: "card-facts" },
        h("div", {}, ...term("Placements", c.placements === undefined ? "–" : count(c.placements))),
        h("div", {}, ...term("Inflight", live?.inflight === null || !live ? "–" : String(live.inflight))),
        h("div", {}, ...term("WebSockets", live?.sockets === null || !live ? "–" : String(live.sockets))),
        h("div", {}, ...term("Lease left", relativeLease(w.expiry, c.now))),
        h("div", {}, ...term("Version", live?.version ?? "–")),
      ),
      headroomBar(w, c.mean),
      this.actions(w),
      c.details.has(w.sessionId)
        ? h(
            "details",
            { open: true },
            h("summary", {}, `Stats of ${w.clientId}`),
            h("pre", {}, c.details.get(w.sessionId)!),
          )
        : null,
    );
  }

  private actions(w: Worker): HTMLElement {
    const button = (label: string, focus: string, onclick: () => void) =>
      h("button", { type: "button", "data-focus": `${focus}:${w.sessionId}`, onclick }, label);
    const act = (kind: WorkerActionKind) => async () => {
      await actOnWorker(w, kind, this.answers);
      this.onAction();
    };
    return h(
      "div",
      { class: "row-actions" },
      button("Stats", "stats", () => this.onStats(w)),
      w.draining ? button("Undrain", "drain", act("undrain")) : button("Drain", "drain", act("drain")),
      w.draining ? null : button("Timed drain", "timed", act("timed")),
    );
  }
}

function stateDetail(w: Worker, state: CardState, now: number): Node | string {
  if (state === "ejected") return h("span", {}, "ejected, back ", timeAgo(w.ejectedUntil!, now));
  if (state === "degraded") return h("span", {}, "degraded since ", timeAgo(w.degradedSince!, now));
  return STATE_WORDS[state];
}

function relativeLease(expiry: number, now: number): string {
  return expiry <= now ? "expired" : relative(expiry, now).replace(/^in /, "");
}

/** The headroom as a meter against twice the fleet's mean, so the mean sits mid-bar. */
function headroomBar(w: Worker, mean: number): HTMLElement {
  const max = Math.max(1, mean * 2);
  const value = Math.min(max, Math.max(0, w.headroom));
  const title = `headroom ${w.headroom}, fleet mean ${mean.toFixed(1)}`;
  return h(
    "label",
    { class: "headroom", title },
    h("span", { class: "muted" }, `Headroom ${w.headroom}`),
    h("meter", { min: "0", max: String(max), low: String(mean / 2), optimum: String(max), value: String(value) }),
    h("span", { class: "visually-hidden" }, title),
  );
}

function hostOf(url: string): string {
  try {
    return new URL(url).host;
  } catch {
    return url;
  }
}

/** What the cards' place shows while no worker is registered: how to start one. */
function noWorkers(): HTMLElement {
  return h(
    "div",
    { class: "empty" },
    h("p", {}, "No worker is registered yet."),
    h(
      "p",
      {},
      "Start one: ",
      h("code", {}, "npm start"),
      " prints the command, e.g. ",
      h("code", {}, "PINBOARD_URL=http://127.0.0.1:8787 CLIENT_ID=worker-a npx tsx examples/worker.ts"),
      " after the exports it shows.",
    ),
  );
}
