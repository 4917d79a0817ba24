import { mkdtemp, readFile, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { checkHistory } from "../../../scripts/chaos/checker.ts";
import type { History } from "../../../scripts/chaos/history.ts";
import { AVAILABILITY_SVG, buildReport, REPORT_JSON, summarize, writeReport } from "../../../scripts/chaos/report.ts";
import { append, cleanHistory, history, killWorker } from "./histories.ts";

/** What a chaos run leaves behind: the JSON report, the availability chart, the terminal summary. */

const dirs: string[] = [];
afterEach(async () => {
  for (const dir of dirs.splice(0)) await rm(dir, { recursive: true, force: true });
});

async function tempDir(): Promise<string> {
  const dir = await mkdtemp(join(tmpdir(), "chaos-report-"));
  dirs.push(dir);
  return dir;
}

/** A run of 3 s with three faults, one of them with a character that must be escaped in XML. */
function faultyRun(): History {
  const h = cleanHistory();
  h.ended = 3000;
  h.faults.push(
    { kind: "proxy-pinboard-redis", target: "pinboard0-redis", mode: "delay", start: 1200, healed: 1900 },
    { kind: "pause-worker", target: "w<2>", start: 2100, healed: 2600, keys: [] },
  );
  return h;
}

/**
 * Well-formedness at the level this SVG needs: every tag closes in order, attributes are quoted, and
 * text holds no raw `<` or bare `&`. Returns the element names in document order.
 */
function elementsOf(xml: string): string[] {
  const names: string[] = [];
  const open: string[] = [];
  const tag = /<(\/?)([a-zA-Z][\w:-]*)((?:\s+[\w:-]+="[^"<]*")*)\s*(\/?)>/g;
  let last = 0;
  for (let m = tag.exec(xml); m !== null; m = tag.exec(xml)) {
    const text = xml.slice(last, m.index);
    expect(text, `text before <${m[2]}>`).not.toMatch(/<|&(?!#\d+;|amp;|lt;|gt;|quot;|apos;)/);
    last = tag.lastIndex;
    const [, closing, name, , selfClosing] = m;
    if (closing) expect(open.pop(), `closing </${name}>`).toBe(name);
    else {
      names.push(name!);
      if (!selfClosing) open.push(name!);
    }
  }
  expect(xml.slice(last).trim()).toBe("");
  expect(open).toEqual([]);
  return names;
}

describe("writeReport", () => {
  it("writes the verdict with the history's counts as JSON that round-trips, without the history itself", async () => {
    const h = faultyRun();
    const verdict = checkHistory(h);
    const dir = join(await tempDir(), "nested", "out");
    const paths = await writeReport(dir, h, verdict);
    expect(paths).toEqual({ json: join(dir, REPORT_JSON), svg: join(dir, AVAILABILITY_SVG) });
    const report = JSON.parse(await readFile(paths.json, "utf8"));
    expect(report).toEqual(JSON.parse(JSON.stringify(buildReport(h, verdict))));
    expect(report.verdict).toEqual(verdict);
    expect(report.history).toEqual({
      operations: 14,
      faults: 3,
      served: 4,
      userDbWrites: 3,
      finalReads: 1,
      started: 0,
      ended: 3000,
      durationMs: 3000,
      leaseTtlMs: 1000,
    });
    expect(report.summary).toEqual(summarize(verdict).split("\n"));
    expect(report).not.toHaveProperty("operations");
  });

  it("draws a well-formed, self-contained SVG with a shaded, labelled span per fault", async () => {
    const h = faultyRun();
    const { svg: path } = await writeReport(await tempDir(), h, checkHistory(h));
    const svg = await readFile(path, "utf8");
    const names = elementsOf(svg);
    expect(names[0]).toBe("svg");
    expect(svg).toMatch(/^<svg xmlns="http:\/\/www.w3.org\/2000\/svg" width="1000" height="360"/);
    expect(svg).not.toMatch(/href|@import|url\(|@font-face/);
    expect(svg.match(/<rect class="fault"/g)).toHaveLength(3);
    const labels = [...svg.matchAll(/<text class="fault-label"[^>]*>([^<]*)<\/text>/g)].map((m) => m[1]);
    expect(labels).toEqual(["kill-worker", "proxy-pinboard-redis (delay)", "pause-worker"]);
    expect(svg).toContain("w&#60;2&#62;");
    expect(svg).toContain(">seconds since start</text>");
    expect(svg).toContain(">100%</text>");
    expect(svg).toMatch(/<path class="availability" d="M[\d.]+,[\d.]+/);
  });

  it("breaks the availability line over seconds without operations", async () => {
    const operations = [append("a", { id: 1, start: 0, end: 500 }), append("b", { id: 2, start: 2000, end: 2500 })];
    const h = history({ operations, started: 0, ended: 3000, finalReads: { "/lists/a": ["a", "b"] } });
    const { svg } = await writeReport(await tempDir(), h, checkHistory(h));
    const d = (await readFile(svg, "utf8")).match(/class="availability" d="([^"]*)"/)![1]!;
    expect(d.match(/[ML]/g)).toEqual(["M", "M"]);
  });
});

describe("summarize", () => {
  it("says operations, faults by kind, violations by kind and recovery quantiles", () => {
    const h = cleanHistory();
    h.faults.push(killWorker("w2", 1450, ["/lists/a"]));
    h.operations.push(append("v9", { id: 99, start: 1460, end: 1470, worker: "w2", epoch: "2" }));
    const text = summarize(checkHistory(h));
    expect(text).toContain("chaos: 1 VIOLATIONS; recovery SLO met");
    expect(text).toContain("operations: 15 (ok 12, fail 1, info 2)");
    expect(text).toContain("faults: 2 (kill-worker 2)");
    expect(text).toContain("violations: lost-append 1");
    expect(text).toContain("recovery: 2 fault-keys, p50 20 ms, p99 400 ms, max 400 ms (limit 3000 ms)");
    expect(text).toContain("lost-append /lists/a: append op 99");
  });

  it("says so when there is nothing wrong", () => {
    const text = summarize(checkHistory(cleanHistory()));
    expect(text.split("\n")[0]).toBe("chaos: no violations; recovery SLO met");
    expect(text).toContain("violations: none");
    expect(text).toContain("user db: 2 writes taken, 1 refused by the fence");
  });
});
