import { type Answer, basePath, call, credentialStore, explain } from "./api.ts";
import type { OverviewCount } from "./glance.ts";
import { type Health, HealthView } from "./health-view.ts";
import { PlacementsView } from "./placements-view.ts";
import { type Worker, WorkersView } from "./workers-view.ts";

/**
 * The operator console: sign in with an operator credential (kept in this tab's sessionStorage),
 * then fleet health, workers and placements, refreshed every few seconds. Every call is one of
 * the operator routes, so the credential's scope filters what it shows exactly as the API does.
 */

const REFRESH_MS = 4000;
const TABS = ["health", "workers", "placements"] as const;
type Tab = (typeof TABS)[number];

const $ = (id: string) => document.getElementById(id)!;

const answers = $("answers");
const health = new HealthView($("view-health"));
const workers = new WorkersView($("view-workers"), answers, () => void refresh());
const placements = new PlacementsView($("view-placements"), answers);
let timer: ReturnType<typeof setTimeout> | undefined;
let placementsLoaded = false;

function show(tab: Tab): void {
  for (const t of TABS) {
    const button = $(`tab-${t}`);
    button.setAttribute("aria-selected", String(t === tab));
    button.tabIndex = t === tab ? 0 : -1;
    $(`view-${t}`).hidden = t !== tab;
  }
  if (tab === "placements" && !placementsLoaded) {
    placementsLoaded = true;
    void placements.load();
  }
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
  const [healthAnswer, workersAnswer, overviewAnswer, ready] = await Promise.all([
    call<Health>("GET", "/registry/health"),
    call<{ workers: Worker[] }>("GET", "/registry/workers"),
    call<OverviewCount>("GET", "/registry/overview"),
    fetch(`${basePath}/readyz`, { cache: "no-store" }).then(
      (r) => r.ok,
      () => false,
    ),
  ]);
  const refused = [healthAnswer, workersAnswer].find((a) => a.status === 401 || a.status === 403);
  if (refused) {
    credentialStore.clear();
    signedIn(false, explain(refused));
    return;
  }
  const listed = workersAnswer.status === 200 ? workersAnswer.body?.workers : undefined;
  const list = listed ?? [];
  health.update({
    health: healthAnswer,
    ready,
    serving: workersAnswer.status === 200 ? true : workersAnswer.error === "not the serving fleet" ? false : null,
    degraded: list.filter((w) => w.degradedSince !== undefined).map((w) => w.clientId),
    ejected: list
      .filter((w) => w.ejectedUntil !== undefined)
      .map((w) => `${w.clientId} until ${new Date(w.ejectedUntil!).toLocaleTimeString()}`),
    workers: listed ?? explain(workersAnswer),
    overview: (overviewAnswer.status === 200 ? overviewAnswer.body : null) ?? explain(overviewAnswer),
  });
  if (workersAnswer.status === 200) workers.update(list, Date.now());
  $("status").textContent = statusLine(workersAnswer);
  timer = setTimeout(() => void refresh(), REFRESH_MS);
}

function statusLine(answer: Answer): string {
  const at = new Date().toLocaleTimeString();
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
  const tab = TABS.find((t) => `tab-${t}` === id);
  if (tab) show(tab);
});
tabList.addEventListener("keydown", (e) => {
  // From the focused tab (WAI-ARIA tabs with automatic activation), else the selected one.
  const focused = TABS.findIndex((t) => $(`tab-${t}`) === document.activeElement);
  const current =
    focused >= 0 ? focused : TABS.findIndex((t) => $(`tab-${t}`).getAttribute("aria-selected") === "true");
  const step = e.key === "ArrowRight" ? 1 : e.key === "ArrowLeft" ? -1 : 0;
  if (step === 0) return;
  const next = TABS[(current + step + TABS.length) % TABS.length]!;
  show(next);
  $(`tab-${next}`).focus();
});

show("health");
if (credentialStore.get()) {
  signedIn(true);
  void refresh();
} else {
  signedIn(false);
}
