import type { z } from "zod";
import type { publicWorker } from "../../api/answers.ts";
import { runAction } from "./actions.ts";
import { call, explain } from "./api.ts";
import { duration, h, render, table } from "./dom.ts";

/** A worker as GET /registry/workers lists it (the answer's schema, as a type only). */
export type Worker = z.infer<typeof publicWorker>;

/** The workers table: one row per live worker, its stats on demand, and drain / undrain. */
export class WorkersView {
  private stats = new Map<string, string>();

  constructor(
    private readonly host: HTMLElement,
    private readonly answers: HTMLElement,
    private readonly refresh: () => void,
  ) {}

  update(workers: Worker[], now: number): void {
    const key = JSON.stringify([
      workers.map((w) => [
        w.sessionId,
        w.headroom,
        w.draining,
        w.degradedSince,
        w.ejectedUntil,
        Math.round((w.expiry - now) / 1000),
      ]),
      [...this.stats],
    ]);
    render(this.host, key, () => (workers.length === 0 ? noWorkers() : this.workersTable(workers, now)));
  }

  private workersTable(workers: Worker[], now: number): HTMLElement {
    const rows = workers.map((w) => this.row(w, now));
    const shown = workers.filter((w) => this.stats.has(w.sessionId));
    return h(
      "div",
      {},
      table(
        ["Client", "Hostname", "Namespaces", "Headroom", "Draining", "Degraded", "Ejected", "Lease left", ""],
        rows,
        "Live workers",
      ),
      ...shown.map((w) =>
        h(
          "details",
          { open: true },
          h("summary", {}, `Stats of ${w.clientId}`),
          h("pre", {}, this.stats.get(w.sessionId)!),
        ),
      ),
    );
  }

  private row(w: Worker, now: number): Array<Node | string> {
    return [
      h("span", { class: "mono" }, w.clientId),
      w.hostname ?? "–",
      w.namespaces.join(", "),
      String(w.headroom),
      w.draining ? h("span", { class: "warn" }, "draining") : "no",
      w.degradedSince ? h("span", { class: "warn" }, `since ${new Date(w.degradedSince).toLocaleTimeString()}`) : "no",
      w.ejectedUntil ? h("span", { class: "warn" }, `until ${new Date(w.ejectedUntil).toLocaleTimeString()}`) : "no",
      duration(w.expiry - now),
      this.rowActions(w),
    ];
  }

  private rowActions(w: Worker): HTMLElement {
    return h(
      "div",
      { class: "row-actions" },
      h(
        "button",
        { type: "button", "data-focus": `stats:${w.sessionId}`, onclick: () => void this.loadStats(w) },
        "Stats",
      ),
      w.draining
        ? h(
            "button",
            { type: "button", "data-focus": `drain:${w.sessionId}`, onclick: () => void this.act(w, "undrain") },
            "Undrain",
          )
        : h(
            "button",
            { type: "button", "data-focus": `drain:${w.sessionId}`, onclick: () => void this.act(w, "drain") },
            "Drain",
          ),
      w.draining
        ? null
        : h(
            "button",
            { type: "button", "data-focus": `timed:${w.sessionId}`, onclick: () => void this.act(w, "timed") },
            "Timed drain",
          ),
    );
  }

  private async loadStats(worker: Worker): Promise<void> {
    const answer = await call<{ workers: Array<{ sessionId: string; stats?: unknown; error?: string }> }>(
      "GET",
      "/registry/stats",
    );
    const entry = answer.body?.workers?.find((w) => w.sessionId === worker.sessionId);
    const text =
      answer.status !== 200
        ? explain(answer)
        : !entry
          ? "not listed"
          : entry.error
            ? `unreachable (its /_pinned/stats did not answer)`
            : JSON.stringify(entry.stats, null, 2);
    this.stats.set(worker.sessionId, text);
    this.refresh();
  }

  private async act(worker: Worker, kind: "drain" | "timed" | "undrain"): Promise<void> {
    const action =
      kind === "undrain"
        ? {
            title: `Undrain ${worker.clientId}`,
            description: "New placements may go to this worker again.",
            path: "/registry/undrain",
            body: { clientId: worker.clientId },
          }
        : kind === "drain"
          ? {
              title: `Drain ${worker.clientId}`,
              description: "No new placements go to this worker; the instances it holds stay until released.",
              path: "/registry/drain",
              body: { clientId: worker.clientId, deadline: null },
            }
          : {
              title: `Timed drain of ${worker.clientId}`,
              description: "No new placements, and the worker releases what it holds by the deadline.",
              path: "/registry/drain",
              body: { clientId: worker.clientId },
              askSeconds: "Deadline in seconds",
            };
    await runAction(action, this.answers);
    this.refresh();
  }
}

/** What the table's place shows while no worker is registered: how to start one. */
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
