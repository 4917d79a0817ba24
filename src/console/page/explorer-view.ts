import type { z } from "zod";
import type { overviewReply } from "../../operator/replies.ts";
import { call, explain } from "./api.ts";
import { h, render, table } from "./dom.ts";
import { windDown } from "./explorer-actions.ts";
import { PlacementDetail } from "./placement-detail.ts";
import { relative } from "./time.ts";

/** GET /registry/overview's answer (its schema, as a type only). */
type Overview = z.infer<typeof overviewReply>;

const PAGE = 50;

/**
 * The placement explorer: find instances by id or id prefix across every namespace the
 * credential covers (GET /registry/overview with `prefix`, `limit` and `cursor`: Redis matches
 * the prefix, so a page never loads the keyspace), open one to see its story
 * (GET /registry/placement) and act on it.
 */
export class ExplorerView {
  private filters = { prefix: "", ns: "", tag: "" };
  /** The cursors of the pages before this one, and this page's. */
  private cursors: string[] = [];
  private page: Overview | null = null;
  private message = "";
  /** How long the last search took, as the page saw it. */
  tookMs: number | null = null;
  private readonly results = h("div", { id: "explorer-results", "aria-live": "polite" });
  readonly detail: PlacementDetail;

  constructor(
    host: HTMLElement,
    private readonly answers: HTMLElement,
  ) {
    this.detail = new PlacementDetail(h("div", { id: "placement-detail" }), answers, () => void this.load());
    host.replaceChildren(this.form(), this.results, this.detail.host);
  }

  private form(): HTMLFormElement {
    const field = (name: keyof typeof this.filters, label: string, placeholder: string, type = "text") =>
      h(
        "label",
        {},
        label,
        " ",
        h("input", {
          name,
          type,
          placeholder,
          autocomplete: "off",
          spellcheck: "false",
          oninput: (e: Event) => (this.filters[name] = (e.target as HTMLInputElement).value.trim()),
        }),
      );
    return h(
      "form",
      {
        class: "filters",
        role: "search",
        onsubmit: (e: Event) => {
          e.preventDefault();
          this.cursors = [];
          void this.load();
        },
      },
      field("prefix", "Id or prefix", "user-42", "search"),
      field("ns", "Namespace", "any"),
      field("tag", "Tag", "any"),
      h("button", { type: "submit", class: "primary" }, "Search"),
    );
  }

  async load(): Promise<void> {
    const query = new URLSearchParams({ limit: String(PAGE) });
    for (const [name, value] of Object.entries(this.filters)) if (value) query.set(name, value);
    const cursor = this.cursors.at(-1);
    if (cursor) query.set("cursor", cursor);
    const started = performance.now();
    const answer = await call<Overview>("GET", `/registry/overview?${query}`);
    this.tookMs = performance.now() - started;
    this.page = answer.status === 200 ? answer.body : null;
    this.message = answer.status === 200 ? "" : explain(answer);
    this.draw();
  }

  private draw(): void {
    const page = this.page;
    render(this.results, JSON.stringify([page, this.message, this.cursors.length]), () => {
      if (!page) return h("p", { class: "refused", role: "alert" }, this.message);
      const clientOf = new Map(page.workers.map((w) => [w.sessionId, w.clientId]));
      const now = Date.now();
      const rows = page.namespaces.flatMap((g) =>
        g.entries.map((e) => [
          g.namespace,
          h(
            "button",
            {
              type: "button",
              class: "link mono",
              "data-focus": `open:${g.namespace}/${e.id}`,
              onclick: () => void this.detail.open(g.namespace, e.id),
            },
            e.id,
          ),
          clientOf.get(e.sessionId) ?? e.sessionId.slice(0, 8),
          e.epoch ?? "–",
          e.expiry ? h("span", { class: "warn" }, `winding down, ends ${relative(e.expiry, now)}`) : "–",
          e.tag ?? "–",
          e.alarm === undefined ? "–" : e.alarm <= now ? "due" : relative(e.alarm, now),
        ]),
      );
      return h(
        "div",
        {},
        h("p", { class: "muted" }, summary(rows.length, page, this.cursors.length)),
        rows.length === 0
          ? null
          : table(["Namespace", "Id", "Owner", "Epoch", "Fence", "Tag", "Alarm"], rows, "Placements found"),
        this.pager(page),
      );
    });
  }

  private pager(page: Overview): HTMLElement {
    const ns = this.filters.ns;
    const group = page.namespaces.find((g) => g.namespace === ns);
    return h(
      "div",
      { class: "pager" },
      this.cursors.length > 0 ? h("button", { type: "button", onclick: () => this.go(0) }, "First page") : null,
      page.cursor ? h("button", { type: "button", onclick: () => this.go(1, page.cursor) }, "Next page") : null,
      ns && group
        ? h(
            "button",
            {
              type: "button",
              class: "danger",
              onclick: async () => {
                await windDown({ namespace: group.namespace, env: group.env }, 0, this.answers);
                await this.load();
              },
            },
            `Wind down all of ${ns}`,
          )
        : null,
    );
  }

  private go(step: 0 | 1, cursor?: string): void {
    if (step === 0) this.cursors = [];
    else if (cursor) this.cursors.push(cursor);
    void this.load();
  }
}

function summary(shown: number, page: Overview, pagesBefore: number): string {
  const where = pagesBefore > 0 ? `page ${pagesBefore + 1}` : "first page";
  if (shown === 0)
    return page.cursor ? `None on this ${where} yet: the search goes on (Next page).` : "No live placement matches.";
  return `${shown} on the ${where}${page.cursor ? "; more on the next" : ""}. Open an id to see its story.`;
}
