import { mkdirSync } from "node:fs";
import { type Browser, chromium, type Page } from "playwright-core";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { PINBOARD_VERSION } from "../../src/contract/version.ts";
import { type Fleet, startFleet } from "../support/fleet.ts";
import { until } from "../support/local-worker.ts";
import { Counter } from "../support/sample-instances.ts";
import { CHROMIUM, operatorGet, SHOTS, screenshot, signIn } from "./console-page.ts";
import { type PageWatch, watchPage } from "./page-watch.ts";

/**
 * The operator console in a real browser: Debian's Chromium driven by playwright-core, against
 * the real Node entry and two real workers. It signs in and sees the fleet's cards (trouble
 * first), the node's traffic history drawn from the first paint, the placement explorer with one
 * placement's story, how placements spread, the audit trail and fleet events, drains a worker
 * and winds a placement down after a confirmation, walks the tabs by keyboard, fits a phone,
 * follows the system's dark mode, shows an empty fleet's hint and says in plain words that a
 * worker credential is refused. No step may trip the page's own CSP, and no view shows a raw
 * epoch-millisecond time. CONSOLE_SCREENSHOTS=<dir> keeps a screenshot of each view there.
 */

let fleet: Fleet;
let browser: Browser;
let page: Page;
let watch: PageWatch;
/** Requests to a namespace no worker serves: refusals (unknown-ns) for the chart and its legend. */
const STRAYS = 2;
const IDS = ["alpha", "bravo", "charlie", "delta"];
/** A 13-digit number: an epoch-millisecond time shown raw. */
const RAW_MS = /\b1\d{12}\b/;

beforeAll(async () => {
  if (!CHROMIUM) throw new Error("Chromium is not installed: apt-get install chromium (.ci/run installs it)");
  fleet = await startFleet({ workers: 0, namespaces: { "/counter": Counter } });
  await fleet.skipColdStart();
  await fleet.addWorker({ clientId: "worker-a" });
  await fleet.addWorker({ clientId: "worker-b" });
  for (const id of IDS) {
    await until(
      async () => (await fetch(`${fleet.pb.url}/counter/${id}/increment`, { method: "POST" })).status === 200,
      20_000,
      100,
    );
  }
  for (let i = 0; i < STRAYS; i++) expect((await fetch(`${fleet.pb.url}/nowhere/x${i}`)).status).toBe(404);
  browser = await chromium.launch({ executablePath: CHROMIUM, args: ["--no-sandbox", "--disable-dev-shm-usage"] });
  page = await browser.newPage({ viewport: { width: 1400, height: 900 } });
  watch = await watchPage(page);
  if (SHOTS) mkdirSync(SHOTS, { recursive: true });
}, 120_000);

afterAll(async () => {
  await browser?.close();
  await fleet?.close();
});

// The page's own Content-Security-Policy never blocks anything it does (an inline style attribute, say).
afterEach(() => {
  expect(watch.take()).toEqual([]);
});

const tab = (name: string) => page.getByRole("tab", { name });
const glanceCount = (id: string) => page.locator(`#glance-${id} .count`).textContent();
const glanceDetail = (id: string) => page.locator(`#glance-${id} small`).textContent();

describe("the operator console", () => {
  it("lands on the fleet: totals on top, one card per worker with its placements", async () => {
    await page.goto(`${fleet.pb.url}/console`);
    await screenshot(page, "sign-in");
    await signIn(page, fleet.pb.url, await fleet.pb.operatorCredential());
    const cards = page.locator("#fleet-cards .card");
    await expect.poll(() => cards.count(), { timeout: 15_000 }).toBe(2);
    expect(await glanceCount("workers")).toBe("2");
    expect(await glanceDetail("workers")).toBe("live; 0 draining, 0 degraded, 0 ejected");
    expect(await glanceCount("placements")).toBe("4");
    expect(await glanceCount("node")).toBe("ready");
    // Each card: client, namespaces, placements (counted in Redis), a headroom meter, lease left.
    const spread = (await operatorGet(fleet, "/registry/spread")) as { workers: Array<{ placements: number }> };
    const counts = await cards.locator("dt:text-is('Placements') + dd").allTextContents();
    expect(counts.map(Number).sort()).toEqual(spread.workers.map((w) => w.placements).sort());
    expect(counts.map(Number).reduce((a, b) => a + b, 0)).toBe(IDS.length);
    expect(await cards.locator("meter").count()).toBe(2);
    const first = (await cards.first().textContent()) ?? "";
    expect(first).toMatch(/worker-[ab]/);
    expect(first).toContain("/counter");
    expect(first).toMatch(/Lease left\d+ s/);
    // The worker's own stats arrive: inflight and open WebSockets are numbers, not dashes.
    await expect
      .poll(() => cards.first().locator("dt:text-is('Inflight') + dd").textContent(), { timeout: 15_000 })
      .toMatch(/^\d+$/);
    // Forwards in the last minute of this node's history (the requests above went through it).
    expect(Number(await glanceCount("forwards"))).toBeGreaterThan(0);
    expect(await cards.first().locator("dt:text-is('Version') + dd").textContent()).toBe(PINBOARD_VERSION);
    expect(await page.locator("#view-fleet").textContent()).not.toMatch(RAW_MS);
    await screenshot(page, "fleet");
  });

  it("draws the node's traffic history from its first paint, each refusal kind in its own colour", async () => {
    const before = watch.firstPaints.length;
    await page.reload();
    await expect.poll(() => watch.firstPaints.length, { timeout: 15_000 }).toBe(before + 1);
    for (const paint of watch.firstPaints) {
      expect(paint.cards).toBe(2);
      expect(paint.bars).toBeGreaterThan(0);
    }
    await tab("Traffic").click();
    const traffic = page.locator("#view-traffic");
    expect(await traffic.locator("svg.chart").count()).toBe(3);
    const legend = traffic.locator(".legend").first();
    expect(await legend.textContent()).toContain(`unknown-ns: ${STRAYS}`);
    const history = (await operatorGet(fleet, "/registry/history")) as { points: Array<{ forwards: number }> };
    const forwards = history.points.reduce((sum, p) => sum + p.forwards, 0);
    expect(forwards).toBeGreaterThanOrEqual(IDS.length);
    expect(await traffic.locator("h3").first().textContent()).toMatch(/Forwards per second \(\d+ in all\)/);
    // Latency p50 and p99 as lines, with their legend.
    expect(await traffic.locator("svg.chart polyline").count()).toBeGreaterThanOrEqual(2);
    const swatches = await traffic
      .locator(".legend .swatch")
      .evaluateAll((els) => els.map((el) => getComputedStyle(el).backgroundColor));
    for (const colour of swatches) expect(colour).not.toMatch(/^(transparent|rgba\(0, 0, 0, 0\))$/);
    const refusalBars = await traffic
      .locator("svg.chart")
      .nth(1)
      .locator("rect")
      .evaluateAll((els) => els.map((el) => getComputedStyle(el).fill));
    expect(refusalBars.length).toBeGreaterThan(0);
    for (const fill of refusalBars) expect(swatches).toContain(fill);
    // Axis times in the viewer's local time, never raw milliseconds.
    expect(await traffic.textContent()).not.toMatch(RAW_MS);
    expect(await traffic.locator("svg.chart .tick").allTextContents()).toContainEqual(
      expect.stringMatching(/\d{1,2}:\d{2}/),
    );
    await screenshot(page, "traffic");
  });

  it("finds a placement by prefix, tells its story and winds it down", async () => {
    await tab("Placements").click();
    const explorer = page.locator("#explorer");
    await explorer.getByLabel("Id or prefix").fill("al");
    await explorer.getByRole("button", { name: "Search" }).click();
    const rows = page.locator("#explorer-results tbody tr");
    await expect.poll(() => rows.count(), { timeout: 10_000 }).toBe(1);
    expect(await rows.textContent()).toMatch(/\/counter\s*alpha\s*worker-[ab]/);
    await rows.getByRole("button", { name: "alpha" }).click();
    const story = page.locator("#placement-detail .story");
    await expect.poll(() => story.textContent(), { timeout: 10_000 }).toMatch(/Ownerworker-[ab] \(live\)/);
    // The owner's own view of the instance, from its /_pinned/stats.
    expect(await story.textContent()).toMatch(/Inflight0/);
    expect(await story.textContent()).toContain("Active since");
    expect(await story.locator("dt:text-is('Fence') + dd").textContent()).toBe("none");
    await screenshot(page, "explorer");
    await story.getByRole("button", { name: "Wind down now" }).click();
    await page.getByRole("dialog").getByRole("button", { name: "Confirm" }).click();
    await expect.poll(() => page.locator("#answers").textContent(), { timeout: 10_000 }).toContain("→ 200");
    // The row is fenced (the owner has until the deadline to let go); the story says so and offers to clear it.
    await expect
      .poll(() => story.locator("dt:text-is('Fence') + dd").textContent(), { timeout: 10_000 })
      .toMatch(/^winding down, ends in \d+ s$/);
    await story.getByRole("button", { name: "Clear fence" }).click();
    await page.getByRole("dialog").getByRole("button", { name: "Confirm" }).click();
    await expect.poll(() => story.locator("dt:text-is('Fence') + dd").textContent(), { timeout: 10_000 }).toBe("none");
    const row = (await operatorGet(fleet, "/registry/placement?ns=/counter&id=alpha")) as {
      placements: Array<{ fence: string }>;
    };
    expect(row.placements.map((p) => p.fence)).toEqual(["none"]);
  });

  it("shows how placements spread over the workers", async () => {
    const spread = page.locator("#spread");
    await expect.poll(() => spread.locator("tbody tr").count(), { timeout: 10_000 }).toBe(2);
    const counts = (await spread.locator("td[data-label='Placements']").allTextContents()).map(Number);
    expect(counts.reduce((a, b) => a + b, 0)).toBe(IDS.length);
    expect(counts).toEqual([...counts].sort((a, b) => b - a));
  });

  it("drains a worker from its card after a confirmation, and the card moves up", async () => {
    await tab("Fleet").click();
    const card = page.locator("#fleet-cards .card", { hasText: "worker-b" });
    await card.getByRole("button", { name: "Drain", exact: true }).click();
    const dialog = page.getByRole("dialog");
    expect(await dialog.textContent()).toContain("Drain worker-b");
    await dialog.getByRole("button", { name: "Confirm" }).click();
    await expect
      .poll(() => page.locator("#answers").textContent(), { timeout: 10_000 })
      .toContain('→ 200 {"drained":true}');
    await expect.poll(() => card.locator(".badge").textContent(), { timeout: 15_000 }).toBe("draining");
    // Trouble first: the draining worker's card leads.
    expect(await page.locator("#fleet-cards .card h3").first().textContent()).toBe("worker-b");
    expect(await glanceDetail("workers")).toBe("live; 1 draining, 0 degraded, 0 ejected");
    await screenshot(page, "drained");
  });

  it("lists who did what, and what happened to the fleet", async () => {
    await tab("Activity").click();
    const timeline = page.locator("#view-activity .timeline");
    await expect.poll(() => timeline.locator("li[data-type='drain']").count(), { timeout: 10_000 }).toBe(1);
    const drain = (await timeline.locator("li[data-type='drain']").textContent()) ?? "";
    expect(drain).toContain("drained worker-b");
    expect(drain).toContain("via console");
    expect(await timeline.locator("li[data-type='wind_down']").textContent()).toContain("/counter/alpha");
    expect(await timeline.locator("li[data-type='clear_fence']").textContent()).toContain("/counter/alpha");
    expect(await timeline.locator("li[data-type='worker.registered']").count()).toBe(2);
    expect(await timeline.locator("li time").first().textContent()).toMatch(/ago$|^now$/);
    expect(await timeline.locator("li time").first().getAttribute("title")).toMatch(/\d{1,2}:\d{2}:\d{2}/);
    await page.getByLabel("Show").selectOption("event");
    await expect.poll(() => timeline.locator("li[data-type='drain']").count(), { timeout: 10_000 }).toBe(0);
    expect(await timeline.locator("li.kind-event").count()).toBeGreaterThanOrEqual(2);
    await page.getByLabel("Show").selectOption("");
    await expect.poll(() => timeline.locator("li[data-type='drain']").count(), { timeout: 10_000 }).toBe(1);
    // The wind-down's deadlineAt in local time, like every time the view shows.
    expect(await timeline.locator("li[data-type='wind_down']").textContent()).toMatch(/deadlineAt: \w{3} \d/);
    expect(await page.locator("#view-activity").textContent()).not.toMatch(RAW_MS);
    await screenshot(page, "activity");
  });

  it("moves between tabs with the arrow keys", async () => {
    await tab("Fleet").focus();
    await page.keyboard.press("ArrowRight");
    expect(await tab("Traffic").getAttribute("aria-selected")).toBe("true");
    expect(await page.locator("#view-traffic").isVisible()).toBe(true);
    await page.keyboard.press("ArrowLeft");
    expect(await tab("Fleet").getAttribute("aria-selected")).toBe("true");
  });

  it("fits a phone-sized window on every tab", async () => {
    await page.setViewportSize({ width: 390, height: 844 });
    for (const name of ["Fleet", "Traffic", "Placements", "Activity"]) {
      await tab(name).click();
      expect(await page.evaluate(() => document.documentElement.scrollWidth <= window.innerWidth), name).toBe(true);
    }
    await tab("Fleet").click();
    await screenshot(page, "phone");
    await page.setViewportSize({ width: 1400, height: 900 });
  });

  it("follows the system's dark mode", async () => {
    const background = () => page.evaluate(() => getComputedStyle(document.body).backgroundColor);
    await page.emulateMedia({ colorScheme: "light" });
    expect(await background()).toBe("rgb(255, 255, 255)");
    await page.emulateMedia({ colorScheme: "dark" });
    expect(await background()).toBe("rgb(13, 17, 23)");
    await screenshot(page, "dark");
    await page.emulateMedia({ colorScheme: "light" });
  });

  it("shows how to start a worker when the credential sees none", async () => {
    await page.getByRole("button", { name: "Sign out" }).click();
    // An operator whose claim covers a namespace no worker serves sees an empty fleet.
    await signIn(page, fleet.pb.url, await fleet.pb.operatorCredential({ namespaces: ["/elsewhere"] }));
    await tab("Fleet").click();
    const cards = page.locator("#fleet-cards");
    await expect.poll(() => cards.textContent(), { timeout: 15_000 }).toContain("No worker is registered yet.");
    expect(await cards.locator(".empty code").first().textContent()).toBe("npm start");
    expect(await glanceCount("workers")).toBe("0");
    expect(await glanceCount("placements")).toBe("0");
    // Nor this node's traffic, which counts every namespace's (GET /registry/history: 403, as /metrics).
    expect(await glanceCount("forwards")).toBe("–");
    expect(await glanceDetail("forwards")).toBe("whole-fleet credentials only");
    await tab("Traffic").click();
    const traffic = page.locator("#view-traffic");
    expect(await traffic.locator("svg.chart").count()).toBe(0);
    expect(await traffic.textContent()).toBe(
      "This node's traffic counts the requests of every namespace, so only a credential over the whole fleet " +
        'sees it: namespaces "*", with no hostname or env restriction (as for /metrics). This credential\'s claim is narrower.',
    );
    // Nor does it see the others' audit trail.
    await tab("Activity").click();
    await expect
      .poll(() => page.locator("#view-activity").textContent(), { timeout: 10_000 })
      .toContain("Nothing recorded yet that this credential may see.");
    await page.getByRole("button", { name: "Sign out" }).click();
    await signIn(page, fleet.pb.url, await fleet.pb.operatorCredential());
  });

  it("says in plain words that a worker credential is refused, and keeps nothing", async () => {
    await page.getByRole("button", { name: "Sign out" }).click();
    await signIn(page, fleet.pb.url, await fleet.pb.workerCredential());
    await expect
      .poll(() => page.locator("#signin-error").textContent(), { timeout: 10_000 })
      .toContain("403 forbidden");
    expect(await page.locator("#signin-error").textContent()).toContain("pinboard:operator scope");
    expect(await page.evaluate(() => sessionStorage.length)).toBe(0);
    // Never in a URL.
    expect(page.url()).toBe(`${fleet.pb.url}/console`);
  });
});
