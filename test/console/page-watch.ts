import type { Page } from "playwright-core";

/**
 * What the console page does that a test cannot see afterwards: every Content-Security-Policy
 * violation (the page's `securitypolicyviolation` events and the browser's console messages about
 * the policy), and what the fleet view held the first time it was drawn after each load.
 * The watch is injected by the browser (an init script, which the page's CSP does not govern)
 * and reports through exposed functions, so it survives navigations and never relaxes the policy.
 */

export interface FirstPaint {
  /** Bars with a positive height in the traffic charts, drawn in the same pass. */
  bars: number;
  /** Worker cards. */
  cards: number;
  /** The fleet view's text. */
  text: string;
  /** The at-a-glance forwards/s value. */
  forwards: string;
}

export interface PageWatch {
  /** CSP violations seen since the last `take()`, each in a line. */
  violations: string[];
  /** The fleet view's first paint after each load, oldest first. */
  firstPaints: FirstPaint[];
  /** The violations so far, and forgets them. */
  take(): string[];
}

const CSP_WORDS = /content[- ]security[- ]policy/i;

export async function watchPage(page: Page): Promise<PageWatch> {
  const watch: PageWatch = {
    violations: [],
    firstPaints: [],
    take() {
      const seen = watch.violations;
      watch.violations = [];
      return seen;
    },
  };
  page.on("console", (message) => {
    if (CSP_WORDS.test(message.text())) watch.violations.push(`console: ${message.text()}`);
  });
  await page.exposeFunction("__pinboardCspViolation", (line: string) => watch.violations.push(line));
  await page.exposeFunction("__pinboardFirstPaint", (paint: FirstPaint) => watch.firstPaints.push(paint));
  await page.addInitScript(inPage);
  return watch;
}

/** Runs in the page before its own script, at every load. */
function inPage(): void {
  const report = window as unknown as {
    __pinboardCspViolation(line: string): void;
    __pinboardFirstPaint(paint: FirstPaint): void;
  };
  document.addEventListener("securitypolicyviolation", (e) =>
    report.__pinboardCspViolation(`${e.violatedDirective} blocked ${e.blockedURI || "inline"}: ${e.sample}`),
  );
  const observer = new MutationObserver(() => {
    const view = document.getElementById("view-fleet");
    const cards = document.getElementById("fleet-cards");
    if (!view || !cards || cards.childElementCount === 0) return;
    observer.disconnect();
    const traffic = document.getElementById("view-traffic");
    const bars = [...(traffic?.querySelectorAll("svg.chart rect") ?? [])].filter(
      (r) => Number(r.getAttribute("height")) > 0,
    );
    report.__pinboardFirstPaint({
      bars: bars.length,
      cards: cards.querySelectorAll(".card").length,
      text: view.textContent ?? "",
      forwards: view.querySelector("#glance-forwards .count")?.textContent ?? "",
    });
  });
  observer.observe(document, { childList: true, subtree: true });
}
