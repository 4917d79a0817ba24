import type { z } from "zod";
import type { auditReply } from "../../operator/audit-reply.ts";
import { call, explain } from "./api.ts";
import { h, render } from "./dom.ts";
import { readableValue, timeAgo } from "./time.ts";

/** One entry of GET /registry/audit: an operator's action or a fleet event (its schema, as a type only). */
export type AuditEntry = z.infer<typeof auditReply>["entries"][number];

const WORDS: Record<string, string> = {
  wind_down: "wound down",
  clear_fence: "cleared the fence of",
  drain: "drained",
  undrain: "undrained",
  sweep: "swept the fleet",
  "worker.registered": "Worker registered",
  "worker.died": "Worker died: its lease expired",
  "worker.drained": "Worker drained and left",
  "worker.deregistered": "Worker left",
  "worker.ejected": "Worker ejected for failing forwards",
  "worker.readmitted": "Worker re-admitted",
};

const PAGE = 50;
/**
 * Requests one click on "Older" makes at most to find an entry: the server looks at a bounded
 * part of the trail per request, so a narrow credential may get empty pages with a cursor. A
 * refresh (every few seconds) makes one request, never more.
 */
const OLDER_REQUESTS = 5;
type Filter = "" | "action" | "event";

/**
 * Who did what to the fleet, and what happened to it: the audit trail's capped stream, newest
 * first, filtered by the credential's scope on the server, by kind here, older pages on demand.
 */
export class ActivityView {
  private filter: Filter = "";
  private older: AuditEntry[] = [];
  private cursor: string | undefined;
  /** Whether the operator went past the newest page: the cursor is then where "Older" left off. */
  private paged = false;
  private readonly list = h("div", { id: "activity-list" });

  constructor(host: HTMLElement) {
    const select = h(
      "select",
      { "aria-label": "Show", onchange: (e: Event) => this.setFilter((e.target as HTMLSelectElement).value as Filter) },
      h("option", { value: "" }, "Everything"),
      h("option", { value: "action" }, "Operator actions"),
      h("option", { value: "event" }, "Fleet events"),
    );
    host.replaceChildren(h("div", { class: "filters" }, h("label", {}, "Show ", select)), this.list);
  }

  private setFilter(filter: Filter): void {
    this.filter = filter;
    this.older = [];
    this.paged = false;
    void this.load();
  }

  /** The newest page (each refresh), plus the older pages the operator asked for. */
  async load(): Promise<void> {
    const answer = await this.page(undefined);
    if (answer.status !== 200 || !answer.body) {
      render(this.list, JSON.stringify(answer), () => h("p", { class: "refused" }, explain(answer)));
      return;
    }
    const newest = answer.body.entries;
    if (!this.paged) this.cursor = answer.body.cursor;
    const seen = new Set(newest.map((e) => e.id));
    this.draw([...newest, ...this.older.filter((e) => !seen.has(e.id))]);
  }

  private async more(): Promise<void> {
    this.paged = true;
    for (let request = 0; request < OLDER_REQUESTS && this.cursor; request++) {
      const answer = await this.page(this.cursor);
      if (answer.status !== 200 || !answer.body) return;
      this.older.push(...answer.body.entries);
      this.cursor = answer.body.cursor;
      if (answer.body.entries.length > 0) break;
    }
    await this.load();
  }

  private page(before: string | undefined) {
    const query = new URLSearchParams({ limit: String(PAGE) });
    if (this.filter) query.set("kind", this.filter);
    if (before) query.set("before", before);
    return call<{ entries: AuditEntry[]; cursor?: string }>("GET", `/registry/audit?${query}`);
  }

  private draw(entries: AuditEntry[]): void {
    const now = Date.now();
    render(this.list, JSON.stringify([entries, this.cursor, Math.floor(now / 5000)]), () =>
      h(
        "div",
        {},
        entries.length === 0
          ? h(
              "p",
              { class: "muted" },
              this.cursor
                ? "Nothing this credential may see among the newest entries."
                : "Nothing recorded yet that this credential may see.",
            )
          : h(
              "ol",
              { class: "timeline", "aria-label": "Audit trail and fleet events" },
              ...entries.map((e) => entry(e, now)),
            ),
        this.cursor ? h("button", { type: "button", onclick: () => void this.more() }, "Older") : null,
      ),
    );
  }
}

function entry(e: AuditEntry, now: number): HTMLElement {
  const words = WORDS[e.type] ?? e.type;
  const headline =
    e.kind === "action"
      ? h(
          "span",
          {},
          h("strong", {}, e.subject ?? "someone"),
          ` ${words} `,
          h("span", { class: "mono" }, targetText(e.target)),
        )
      : h("span", {}, h("strong", {}, words), " ", h("span", { class: "mono" }, targetText(e.target)));
  return h(
    "li",
    { class: `kind-${e.kind}`, "data-type": e.type },
    timeAgo(e.at, now),
    h("div", {}, headline, viaText(e)),
    details(e.detail),
  );
}

/** Through which door an action came (api, cli, console), or which part of Pinboard saw an event. */
function viaText(e: AuditEntry): HTMLElement | null {
  if (!e.via) return null;
  return h("small", { class: "muted" }, e.kind === "action" ? ` via ${e.via}` : ` (seen by the ${e.via})`);
}

/** The target in a few words: clientId (and its namespaces), or namespace/id, or the namespace. */
function targetText(target: Record<string, unknown>): string {
  const parts: string[] = [];
  if (typeof target.clientId === "string") parts.push(target.clientId);
  if (Array.isArray(target.namespaces)) {
    const omitted = typeof target.namespacesOmitted === "number" ? ` and ${target.namespacesOmitted} more` : "";
    parts.push(`${target.namespaces.join(", ")}${omitted}`);
  }
  if (typeof target.namespace === "string")
    parts.push(typeof target.id === "string" ? `${target.namespace}/${target.id}` : target.namespace);
  if (typeof target.env === "string") parts.push(`env ${target.env}`);
  return parts.join(" ");
}

function details(detail: Record<string, unknown>): HTMLElement | null {
  const pairs = Object.entries(detail).filter(([, v]) => v !== null && v !== undefined);
  if (pairs.length === 0) return null;
  return h(
    "small",
    { class: "muted detail" },
    pairs
      .map(([k, v]) => `${k}: ${typeof v === "object" ? JSON.stringify(v) : String(readableValue(k, v))}`)
      .join(" · "),
  );
}
