import type { z } from "zod";
import type { healthReply } from "../../operator/replies.ts";
import { ActivityView } from "./activity-view.ts";
import { type Answer, basePath, call, credentialStore, explain } from "./api.ts";
import { render } from "./dom.ts";
import { ExplorerView } from "./explorer-view.ts";
import { readStats, type Worker, type WorkerStats } from "./fleet-order.ts";
import { FleetView, type Spread } from "./fleet-view.ts";
import { glance } from "./glance.ts";
import { SpreadView } from "./spread-view.ts";
import { localTime, readableJson } from "./time.ts";
import { type History, TrafficView } from "./traffic-view.ts";

/**
 * The operator console: sign in with an operator credential (kept in this tab's sessionStorage),
 * then the fleet, its traffic, the placement explorer and the activity log, refreshed every few
 * seconds. Every call is one of the operator routes, so the credential's scope filters what it
 * shows exactly as the API does.
 */

const REFRESH_MS = 4000;
/** Every worker's /_pinned/stats is asked through Pinboard every this many refreshes. */
const STATS_EVERY = 3;
const TABS = ["fleet", "traffic", "placements", "activity"] as const;
type Tab = (typeof TABS)[number];
type Health = z.infer<typeof healthReply>;

const $ = (id: string) => document.getElementById(id)!;

const answers = $("answers");
const fleet = new FleetView(
  $("fleet-cards"),
  answers,
  () => void refresh(),
  (w) => void showStats(w),
);
const traffic = new TrafficView($("view-traffic"));
new ExplorerView($("explorer"), answers);
const spread = new SpreadView($("spread"));
const activity = new ActivityView($("view-activity"));
let timer: ReturnType<typeof setTimeout> | undefined;
let tab: Tab = "fleet";
let refreshes = 0;
let stats = new Map<string, WorkerStats>();
const details = new Map<string, string>();

function show(next: Tab): void {
  tab = next;
  for (const t of TABS) {
    const button = $(`tab-${t}`);
    button.setAttribute("aria-selected", String(t === next));
    button.tabIndex = t === next ? 0 : -1;
    $(`view-${t}`).hidden = t !== next;
  }
  if (next === "activity") void activity.load();
}

function signedIn(yes: boolean, message = ""): void {
  $("signin").hidden = yes;
  $("console").hidden = !yes;
  $("signout").hidden = !yes;
  $("signin-error").textContent = message;
  if (!yes) clearTimeout(timer);
}

async function refresh(): Promise<void> {
  clearTimeout(timer);
  // Everything the first paint shows, fetched before it: nothing is drawn empty and filled later.
  const [health, workers, spreadAnswer, history, ready] = await Promise.all([
    call<Health>("GET", "/registry/health"),
    call<{ workers: Worker[] }>("GET", "/registry/workers"),
    call<Spread>("GET", "/registry/spread"),
    call<History>("GET", "/registry/history"),
    fetch(`${basePath}/readyz`, { cache: "no-store" }).then(
      (r) => r.ok,
      () => false,
    ),
  ]);
  const refused = [health, workers].find((a) => a.status === 401 || a.status === 403);
  if (refused) {
    credentialStore.clear();
    signedIn(false, explain(refused));
    return;
  }
  draw({ health, workers, spreadAnswer, history, ready });
  if (refreshes++ % STATS_EVERY === 0) void loadStats();
  if (tab === "activity") void activity.load();
  $("status").textContent = statusLine(workers);
  timer = setTimeout(() => void refresh(), REFRESH_MS);
}

interface Answers {
  health: Answer<Health>;
  workers: Answer<{ workers: Worker[] }>;
  spreadAnswer: Answer<Spread>;
  history: Answer<History>;
  ready: boolean;
}
let last: Answers | null = null;

function draw(a: Answers = last!): void {
  last = a;
  const now = Date.now();
  const list = a.workers.status === 200 ? (a.workers.body?.workers ?? []) : explain(a.workers);
  const spreadBody = a.spreadAnswer.status === 200 ? a.spreadAnswer.body : null;
  const historyBody = a.history.status === 200 ? a.history.body : null;
  const state = { workers: list, spread: spreadBody, stats, details, now };
  const node = {
    serving: a.workers.status === 200 ? true : a.workers.error === "not the serving fleet" ? false : null,
    ready: a.ready,
    quarantineMs: a.health.status === 200 ? (a.health.body?.quarantineMs ?? null) : null,
  };
  render(
    $("fleet-glance"),
    JSON.stringify([
      state.workers,
      spreadBody,
      historyBody?.points.slice(-6) ?? a.history.status,
      node,
      Math.floor(now / 5000),
    ]),
    () => glance(state, historyBody, node, a.history.status === 403),
  );
  fleet.update(state);
  traffic.update(a.history);
  spread.update(spreadBody, typeof list === "string" ? [] : list, now);
}

async function loadStats(): Promise<void> {
  const answer = await call<{ workers: Array<{ sessionId: string; stats?: unknown; error?: string }> }>(
    "GET",
    "/registry/stats",
  );
  if (answer.status !== 200 || !answer.body) return;
  stats = new Map(answer.body.workers.map((w) => [w.sessionId, readStats(w)]));
  for (const w of answer.body.workers) if (details.has(w.sessionId)) details.set(w.sessionId, statsText(w));
  if (last) draw();
}

async function showStats(worker: Worker): Promise<void> {
  details.set(worker.sessionId, "asking the worker…");
  if (last) draw();
  await loadStats();
  if (details.get(worker.sessionId) === "asking the worker…") details.set(worker.sessionId, "not listed");
  if (last) draw();
}

function statsText(entry: { stats?: unknown; error?: string }): string {
  return entry.error ? "unreachable (its /_pinned/stats did not answer)" : readableJson(entry.stats);
}

function statusLine(answer: Answer): string {
  const at = localTime(Date.now());
  return answer.status === 200 ? `Updated ${at}` : `${explain(answer)} (${at})`;
}

$("signin-form").addEventListener("submit", (e) => {
  e.preventDefault();
  const input = $("credential") as HTMLInputElement;
  const token = input.value.trim();
  if (!token) return;
  credentialStore.set(token);
  input.value = "";
  signedIn(true);
  void refresh();
});
$("signout").addEventListener("click", () => {
  credentialStore.clear();
  signedIn(false);
});
const tabList = $("tabs");
tabList.addEventListener("click", (e) => {
  const id = (e.target as HTMLElement).closest("button")?.id ?? "";
  const next = TABS.find((t) => `tab-${t}` === id);
  if (next) show(next);
});
tabList.addEventListener("keydown", (e) => {
  // From the focused tab (WAI-ARIA tabs with automatic activation), else the selected one.
  const focused = TABS.findIndex((t) => $(`tab-${t}`) === document.activeElement);
  const current = focused >= 0 ? focused : TABS.indexOf(tab);
  const step = e.key === "ArrowRight" ? 1 : e.key === "ArrowLeft" ? -1 : 0;
  if (step === 0) return;
  const next = TABS[(current + step + TABS.length) % TABS.length]!;
  show(next);
  $(`tab-${next}`).focus();
});

show("fleet");
if (credentialStore.get()) {
  signedIn(true);
  void refresh();
} else {
  signedIn(false);
}
