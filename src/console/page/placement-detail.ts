import type { z } from "zod";
import type { placementReply } from "../../operator/replies.ts";
import { call, explain } from "./api.ts";
import { h, render, term } from "./dom.ts";
import { windDown } from "./explorer-actions.ts";
import { timeAgo } from "./time.ts";

/** One row of GET /registry/placement: a placement of the id in one env, with its owner's view of it. */
export type PlacementStory = z.infer<typeof placementReply>["placements"][number];

/**
 * One placement's story: its owner (live or dead), epoch, wind-down fence, tag and durable alarm,
 * and what the owner itself says of the instance (its state, inflight requests, open sockets,
 * since when it is active), with wind down and clear fence.
 */
export class PlacementDetail {
  readonly host: HTMLElement;
  private target: { ns: string; id: string } | null = null;

  constructor(
    host: HTMLElement,
    private readonly answers: HTMLElement,
    private readonly afterAction: () => void,
  ) {
    this.host = host;
  }

  async open(ns: string, id: string): Promise<void> {
    this.target = { ns, id };
    const answer = await call<{ placements: PlacementStory[] }>(
      "GET",
      `/registry/placement?${new URLSearchParams({ ns, id })}`,
    );
    const now = Date.now();
    render(this.host, JSON.stringify([answer, Math.floor(now / 1000)]), () =>
      h(
        "section",
        { class: "story", "aria-label": `Placement ${ns}/${id}` },
        h("h3", {}, "Placement ", h("span", { class: "mono" }, `${ns}/${id}`)),
        answer.status === 200 && answer.body
          ? h("div", {}, ...answer.body.placements.map((p) => this.story(p, now)))
          : h("p", { class: answer.status === 404 ? "muted" : "refused" }, explain(answer)),
      ),
    );
  }

  private story(p: PlacementStory, now: number): HTMLElement {
    const fenced = p.fence !== "none";
    return h(
      "div",
      { class: "story-row" },
      h(
        "dl",
        { class: "facts" },
        ...term("Owner", ownerWords(p)),
        ...(p.env !== null ? term("Env", p.env) : []),
        ...term("Epoch", p.epoch ?? "not placed yet"),
        ...term("Fence", fenceWords(p, now)),
        ...(p.overwritten !== null ? term("Wake owed", `at epoch ${p.overwritten} (its owner died)`) : []),
        ...term("Tag", p.tag ?? "–"),
        ...term("Alarm", p.alarm === null ? "none" : timeAgo(p.alarm, now)),
      ),
      h("h4", {}, "What the owner says"),
      instance(p.instance, now),
      h(
        "div",
        { class: "row-actions" },
        h("button", { type: "button", onclick: () => void this.act(p, 0) }, "Wind down now"),
        fenced ? h("button", { type: "button", onclick: () => void this.act(p, null) }, "Clear fence") : null,
      ),
    );
  }

  private async act(p: PlacementStory, deadline: 0 | null): Promise<void> {
    await windDown({ namespace: p.namespace, env: p.env, id: p.id }, deadline, this.answers);
    this.afterAction();
    if (this.target) await this.open(this.target.ns, this.target.id);
  }
}

function ownerWords(p: PlacementStory): string {
  if (p.sessionId === "") return "none yet (paged back in; the next request places it)";
  const who = p.clientId ?? p.sessionId.slice(0, 8);
  return `${who} (${p.owner === "live" ? "live" : "dead: the next request places it again"})`;
}

function fenceWords(p: PlacementStory, now: number): Node | string {
  if (p.fence === "none" || p.expiry === undefined) return "none";
  const when = timeAgo(p.expiry, now);
  return p.fence === "pending"
    ? h("span", { class: "warn" }, "winding down, ends ", when)
    : h("span", { class: "warn" }, "passed ", when, ": the next request places it again");
}

function instance(value: PlacementStory["instance"], now: number): HTMLElement {
  if (value === null) return h("p", { class: "muted" }, "Not active on its owner (it activates on the next request).");
  if ("error" in value) return h("p", { class: "warn" }, "The owner's /_pinned/stats did not answer.");
  const v = value as { state?: unknown; inflight?: unknown; sockets?: unknown; activatedAt?: unknown; epoch?: unknown };
  return h(
    "dl",
    { class: "facts" },
    ...term("State", String(v.state ?? "–")),
    ...term("Inflight", String(v.inflight ?? "–")),
    ...term("WebSockets", String(v.sockets ?? "–")),
    ...term("Active since", typeof v.activatedAt === "number" ? timeAgo(v.activatedAt, now) : "–"),
    ...term("Its epoch", String(v.epoch ?? "–")),
  );
}
