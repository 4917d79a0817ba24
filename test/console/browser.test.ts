import { existsSync, mkdirSync } from "node:fs";
import { join } from "node:path";
import { type Browser, chromium, type Page } from "playwright-core";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { type Fleet, startFleet } from "../support/fleet.ts";
import { until } from "../support/local-worker.ts";
import { Counter } from "../support/sample-instances.ts";
import { type PageWatch, watchPage } from "./page-watch.ts";

/**
 * The operator console in a real browser: Debian's Chromium driven by playwright-core, against
 * the real Node entry and two real workers. It signs in, sees health, the workers and the
 * placements, drains a worker and sees the API's answer, walks the tabs by keyboard, fits a
 * phone-sized window, shows an empty fleet's hint, and says in plain words that a worker
 * credential is refused. The landing tab shows the fleet at a glance and a chart with data from
 * its first paint, the legend keeps its colours, and no step may trip the page's own CSP.
 * CONSOLE_SCREENSHOTS=<dir> keeps a screenshot of each view there (docs/console/ holds them).
 */

/** Debian's chromium (`apt-get install chromium`, which .ci/run does). */
const CHROMIUM = ["/usr/bin/chromium", "/usr/bin/chromium-browser"].find((path) => existsSync(path));
const SHOTS = process.env.CONSOLE_SCREENSHOTS;

let fleet: Fleet;
let browser: Browser;
let page: Page;
let watch: PageWatch;
/** Requests to a namespace no worker serves: refusals (unknown-ns) for the chart and its legend. */
const STRAYS = 2;

beforeAll(async () => {
  if (!CHROMIUM) throw new Error("Chromium is not installed: apt-get install chromium (.ci/run installs it)");
  fleet = await startFleet({ workers: 0, namespaces: { "/counter": Counter } });
  await fleet.skipColdStart();
  await fleet.addWorker({ clientId: "worker-a" });
  await fleet.addWorker({ clientId: "worker-b" });
  for (const id of ["alpha", "bravo", "charlie", "delta"]) {
    await until(
      async () => (await fetch(`${fleet.pb.url}/counter/${id}/increment`, { method: "POST" })).status === 200,
      20_000,
      100,
    );
  }
  for (let i = 0; i < STRAYS; i++) expect((await fetch(`${fleet.pb.url}/nowhere/x${i}`)).status).toBe(404);
  browser = await chromium.launch({ executablePath: CHROMIUM, args: ["--no-sandbox", "--disable-dev-shm-usage"] });
  page = await browser.newPage({ viewport: { width: 1280, height: 800 } });
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

async function shot(name: string): Promise<void> {
  if (SHOTS) await page.screenshot({ path: join(SHOTS, `${name}.png`), fullPage: true });
}

async function signIn(token: string): Promise<void> {
  await page.goto(`${fleet.pb.url}/console`);
  await page.getByLabel("Operator credential").fill(token);
  await page.getByRole("button", { name: "Sign in" }).click();
}

describe("the operator console", () => {
  it("signs in and shows health, workers and placements", async () => {
    await page.goto(`${fleet.pb.url}/console`);
    await shot("sign-in");
    await signIn(await fleet.pb.operatorCredential());
    const health = page.locator("#view-health");
    await expect.poll(() => health.textContent(), { timeout: 15_000 }).toContain("Serving");
    await expect.poll(() => health.locator(".facts dd").first().textContent()).toBe("yes");
    expect(await health.textContent()).toContain("Forwards placed");
    await shot("health");

    await page.getByRole("tab", { name: "Workers" }).click();
    const workers = page.locator("#view-workers");
    await expect.poll(() => workers.locator("tbody tr").count(), { timeout: 15_000 }).toBe(2);
    expect(await workers.locator("tbody").textContent()).toMatch(/worker-a[\s\S]*\/counter/);
    await shot("workers");

    await page.getByRole("tab", { name: "Placements" }).click();
    const placements = page.locator("#view-placements");
    await expect.poll(() => placements.locator("tbody tr").count(), { timeout: 15_000 }).toBe(4);
    const text = (await placements.locator("tbody").textContent()) ?? "";
    for (const id of ["alpha", "bravo", "charlie", "delta"]) expect(text).toContain(id);
    expect(text).toMatch(/worker-[ab]/);
    await placements.getByLabel("Id prefix").fill("al");
    await placements.getByRole("button", { name: "Show" }).click();
    await expect.poll(() => placements.locator("tbody tr").count()).toBe(1);
    await shot("placements");
  });

  it("draws the chart with data from its first paint, its legend in the bars' colours", async () => {
    const before = watch.firstPaints.length;
    await page.reload();
    await expect.poll(() => watch.firstPaints.length, { timeout: 15_000 }).toBe(before + 1);
    // Every first paint so far (the sign-in's and this reload's) drew bars, not an empty box.
    expect(watch.firstPaints.length).toBeGreaterThanOrEqual(2);
    for (const paint of watch.firstPaints) {
      expect(paint.bars).toBeGreaterThan(0);
      expect(paint.text).not.toContain("No traffic");
      expect(Number(paint.forwards)).toBeGreaterThan(0);
    }
    const health = page.locator("#view-health");
    const legend = health.locator(".legend");
    expect(await legend.textContent()).toContain(`unknown-ns: ${STRAYS}`);
    expect(await legend.textContent()).toMatch(/forward: \d/);
    const swatches = await legend
      .locator(".swatch")
      .evaluateAll((els) => els.map((el) => getComputedStyle(el).backgroundColor));
    expect(swatches.length).toBeGreaterThanOrEqual(2);
    for (const colour of swatches) expect(colour).not.toMatch(/^(transparent|rgba\(0, 0, 0, 0\))$/);
    expect(new Set(swatches).size).toBe(swatches.length);
    const fills = await health
      .locator("svg.chart rect")
      .evaluateAll((els) => els.map((el) => getComputedStyle(el).fill));
    expect(fills.length).toBeGreaterThan(0);
    for (const fill of fills) expect(swatches).toContain(fill);
    // quarantineMs is the cold start, in the operator's words.
    expect(await health.textContent()).not.toMatch(/quarantine/i);
  });

  it("shows the fleet at a glance on the landing tab", async () => {
    await page.getByRole("tab", { name: "Health" }).click();
    const count = (id: string) => page.locator(`#glance-${id} .count`).textContent();
    const detail = (id: string) => page.locator(`#glance-${id} small`).textContent();
    await expect.poll(() => count("workers"), { timeout: 15_000 }).toBe("2");
    expect(await detail("workers")).toBe("live, 0 draining");
    expect(await count("placements")).toBe("4");
    expect(Number(await count("forwards"))).toBeGreaterThan(0);
    // Refusals: what this node counted, the strays at least.
    const answer = await fetch(`${fleet.pb.url}/registry/health`, {
      headers: { authorization: `Bearer ${await fleet.pb.operatorCredential()}` },
    });
    const { resolutions } = (await answer.json()) as { resolutions: Record<string, number> };
    const refusals = Object.entries(resolutions).reduce((sum, [o, n]) => sum + (o === "forward" ? 0 : n), 0);
    expect(refusals).toBeGreaterThanOrEqual(STRAYS);
    await expect.poll(() => count("refusals"), { timeout: 10_000 }).toBe(String(refusals));
  });

  it("drains a worker after a confirmation and shows the API's answer", async () => {
    await page.getByRole("tab", { name: "Workers" }).click();
    const row = page.locator("#view-workers tbody tr", { hasText: "worker-a" });
    await row.getByRole("button", { name: "Drain", exact: true }).click();
    const dialog = page.getByRole("dialog");
    expect(await dialog.textContent()).toContain("Drain worker-a");
    await dialog.getByRole("button", { name: "Confirm" }).click();
    await expect
      .poll(() => page.locator("#answers").textContent(), { timeout: 10_000 })
      .toContain('→ 200 {"drained":true}');
    await expect
      .poll(() => page.locator("#view-workers tbody tr", { hasText: "worker-a" }).textContent(), { timeout: 15_000 })
      .toContain("draining");
    await shot("drained");
    // Pinboard agrees: the drain is written.
    const listed = await fetch(`${fleet.pb.url}/registry/workers`, {
      headers: { authorization: `Bearer ${await fleet.pb.operatorCredential()}` },
    });
    const drained = ((await listed.json()) as { workers: Array<{ clientId: string; draining: boolean }> }).workers.find(
      (w) => w.clientId === "worker-a",
    );
    expect(drained?.draining).toBe(true);
    // The landing tab counts it.
    await page.getByRole("tab", { name: "Health" }).click();
    await expect
      .poll(() => page.locator("#glance-workers small").textContent(), { timeout: 15_000 })
      .toBe("live, 1 draining");
  });

  it("moves between tabs with the arrow keys", async () => {
    await page.getByRole("tab", { name: "Health" }).focus();
    await page.keyboard.press("ArrowRight");
    expect(await page.getByRole("tab", { name: "Workers" }).getAttribute("aria-selected")).toBe("true");
    expect(await page.locator("#view-workers").isVisible()).toBe(true);
    await page.keyboard.press("ArrowLeft");
    expect(await page.getByRole("tab", { name: "Health" }).getAttribute("aria-selected")).toBe("true");
  });

  it("fits a phone-sized window", async () => {
    await page.setViewportSize({ width: 390, height: 844 });
    await page.getByRole("tab", { name: "Workers" }).click();
    await expect.poll(() => page.locator("#view-workers tbody tr").count()).toBe(2);
    expect(await page.evaluate(() => document.documentElement.scrollWidth <= window.innerWidth)).toBe(true);
    await shot("phone");
    await page.setViewportSize({ width: 1280, height: 800 });
  });

  it("shows how to start a worker when the credential sees none", async () => {
    await page.getByRole("button", { name: "Sign out" }).click();
    // An operator whose claim covers a namespace no worker serves sees an empty fleet.
    await signIn(await fleet.pb.operatorCredential({ namespaces: ["/elsewhere"] }));
    await page.getByRole("tab", { name: "Workers" }).click();
    const workers = page.locator("#view-workers");
    await expect.poll(() => workers.textContent(), { timeout: 15_000 }).toContain("No worker is registered yet.");
    expect(await workers.locator(".empty code").first().textContent()).toBe("npm start");
    expect(await workers.locator("tbody tr").count()).toBe(0);
    // At a glance too: none of the fleet's workers or placements is in this credential's scope.
    expect(await page.locator("#glance-workers .count").textContent()).toBe("0");
    expect(await page.locator("#glance-placements .count").textContent()).toBe("0");
    await page.getByRole("button", { name: "Sign out" }).click();
    await signIn(await fleet.pb.operatorCredential());
  });

  it("says in plain words that a worker credential is refused, and keeps nothing", async () => {
    await page.getByRole("button", { name: "Sign out" }).click();
    await signIn(await fleet.pb.workerCredential());
    await expect
      .poll(() => page.locator("#signin-error").textContent(), { timeout: 10_000 })
      .toContain("403 forbidden");
    expect(await page.locator("#signin-error").textContent()).toContain("pinboard:operator scope");
    expect(await page.evaluate(() => sessionStorage.length)).toBe(0);
    // Never in a URL.
    expect(page.url()).toBe(`${fleet.pb.url}/console`);
  });
});
