import { runAction } from "./actions.ts";
import { call, explain } from "./api.ts";
import { duration, h, render, table } from "./dom.ts";
import type { Worker } from "./workers-view.ts";

interface Group {
  hostname: string | null;
  env: string | null;
  namespace: string;
  entries: Array<{ id: string; sessionId: string; epoch?: string; expiry?: number; tag?: string; alarm?: number }>;
}
interface Overview {
  workers: Worker[];
  namespaces: Group[];
  cursor?: string;
}

const PAGE = 100;

/**
 * Live placements from GET /registry/overview, filtered by namespace, id prefix and tag, a page
 * of 100 at a time (its `limit` and `cursor`), each with its owner, epoch, fence, tag and durable
 * alarm, and wind-down and fence actions.
 */
export class PlacementsView {
  private filters = { ns: "", prefix: "", tag: "" };
  /** The cursors of the pages before this one, and this page's. */
  private cursors: string[] = [];
  private page: Overview | null = null;
  private message = "";
  private readonly results = h("div", {});

  constructor(
    host: HTMLElement,
    private readonly answers: HTMLElement,
  ) {
    const field = (name: keyof typeof this.filters, label: string, placeholder: string) =>
      h(
        "label",
        {},
        label,
        " ",
        h("input", {
          name,
          placeholder,
          autocomplete: "off",
          oninput: (e: Event) => (this.filters[name] = (e.target as HTMLInputElement).value.trim()),
        }),
      );
    const form = h(
      "form",
      {
        class: "filters",
        onsubmit: (e: Event) => {
          e.preventDefault();
          this.cursors = [];
          void this.load();
        },
      },
      field("ns", "Namespace", "/threads"),
      field("prefix", "Id prefix", "H~"),
      field("tag", "Tag", "ws:W"),
      h("button", { type: "submit", class: "primary" }, "Show"),
    );
    host.replaceChildren(form, this.results);
  }

  async load(): Promise<void> {
    const query = new URLSearchParams({ limit: String(PAGE) });
    for (const [name, value] of Object.entries(this.filters)) if (value) query.set(name, value);
    const cursor = this.cursors.at(-1);
    if (cursor) query.set("cursor", cursor);
    const answer = await call<Overview>("GET", `/registry/overview?${query}`);
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
          h("span", { class: "mono" }, e.id),
          clientOf.get(e.sessionId) ?? e.sessionId.slice(0, 8),
          e.epoch ?? "–",
          e.expiry ? h("span", { class: "warn" }, `winding down, ${duration(e.expiry - now)} left`) : "–",
          e.tag ?? "–",
          e.alarm === undefined ? "–" : e.alarm <= now ? "due" : `in ${duration(e.alarm - now)}`,
          h(
            "div",
            { class: "row-actions" },
            h("button", { type: "button", onclick: () => void this.windDown(g, e.id, 0) }, "Wind down now"),
            e.expiry
              ? h("button", { type: "button", onclick: () => void this.windDown(g, e.id, null) }, "Clear fence")
              : null,
          ),
        ]),
      );
      const ns = this.filters.ns;
      const group = page.namespaces.find((g) => g.namespace === ns);
      return h(
        "div",
        {},
        rows.length === 0
          ? h("p", { class: "muted" }, "No live placement matches.")
          : table(["Namespace", "Id", "Owner", "Epoch", "Fence", "Tag", "Alarm", ""], rows, "Live placements"),
        h(
          "div",
          { class: "pager" },
          this.cursors.length > 0 ? h("button", { type: "button", onclick: () => this.go(0) }, "First page") : null,
          page.cursor ? h("button", { type: "button", onclick: () => this.go(1, page.cursor) }, "Next page") : null,
          ns && group
            ? h(
                "button",
                { type: "button", class: "danger", onclick: () => void this.windDown(group, undefined, 0) },
                `Wind down all of ${ns}`,
              )
            : null,
        ),
      );
    });
  }

  private go(step: 0 | 1, cursor?: string): void {
    if (step === 0) this.cursors = [];
    else if (cursor) this.cursors.push(cursor);
    void this.load();
  }

  private async windDown(group: Group, id: string | undefined, deadline: 0 | null): Promise<void> {
    const what = id ? `${group.namespace}/${id}` : `every placement of ${group.namespace}`;
    const body: Record<string, unknown> = {
      namespace: group.namespace,
      deadline,
      ...(id ? { id } : {}),
      ...(group.env ? { env: group.env } : {}),
    };
    await runAction(
      deadline === null
        ? {
            title: `Clear the fence of ${what}`,
            description: "The wind-down deadline is removed; the placement stays where it is.",
            path: "/registry/wind_down",
            body,
          }
        : {
            title: `Wind down ${what}`,
            description: "The owner is told to let go now; the next request places it again, at a higher epoch.",
            path: "/registry/wind_down",
            body,
          },
      this.answers,
    );
    await this.load();
  }
}
