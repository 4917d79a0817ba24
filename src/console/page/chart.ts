import { clockTime } from "./time.ts";

/**
 * Small time-series charts as SVG: stacked bars (counts per slot, by series) and lines
 * (latencies). Colours come from views.css (`series-0` … `series-11`, one class per colour),
 * never from a style attribute, which the console's Content-Security-Policy would block. Every
 * bar and point carries a <title>, so a value is one hover away and read by screen readers.
 */

export const SERIES_COLOURS = 12;

/** The class that colours series `index` (a bar's fill, a line's stroke, a legend swatch). */
export function seriesClass(index: number): string {
  return `series-${index % SERIES_COLOURS}`;
}

export interface ChartSeries {
  name: string;
  label: string;
  /** Which colour (seriesClass). */
  index: number;
  /** One value per slot, oldest first; null where there is none (no forward, no latency). */
  values: ReadonlyArray<number | null>;
}

export interface ChartFrame {
  /** Each slot's start (ms), oldest first. */
  at: readonly number[];
  slotMs: number;
  label: string;
  /** Writes a value for the axis and the titles. */
  format: (value: number) => string;
}

const SVG = "http://www.w3.org/2000/svg";
const WIDTH = 640;
const HEIGHT = 150;
const LEFT = 44;
const BOTTOM = 18;
const PLOT_H = HEIGHT - BOTTOM - 6;

function svg<K extends keyof SVGElementTagNameMap>(
  tag: K,
  attrs: Record<string, string | number>,
  text?: string,
): SVGElementTagNameMap[K] {
  const el = document.createElementNS(SVG, tag);
  for (const [name, value] of Object.entries(attrs)) el.setAttribute(name, String(value));
  if (text !== undefined) {
    const child = tag === "text" ? document.createTextNode(text) : document.createElementNS(SVG, "title");
    if (tag !== "text") child.textContent = text;
    el.append(child);
  }
  return el;
}

/** The frame: axes, the top value and 0 on the left, local clock times below. */
function frame(f: ChartFrame, top: number): SVGSVGElement {
  const root = svg("svg", { viewBox: `0 0 ${WIDTH} ${HEIGHT}`, role: "img", "aria-label": f.label, class: "chart" });
  const base = HEIGHT - BOTTOM;
  root.append(
    svg("line", { x1: LEFT, y1: base + 0.5, x2: WIDTH, y2: base + 0.5, class: "axis" }),
    svg("line", { x1: LEFT, y1: base - PLOT_H, x2: WIDTH, y2: base - PLOT_H, class: "grid" }),
    svg("text", { x: LEFT - 4, y: base - PLOT_H + 4, class: "tick end" }, f.format(top)),
    svg("text", { x: LEFT - 4, y: base, class: "tick end" }, "0"),
  );
  const n = f.at.length;
  for (const i of [0, Math.floor(n / 2), n - 1]) {
    const at = f.at[i];
    if (at === undefined) continue;
    const anchor = i === 0 ? "start" : i === n - 1 ? "end" : "middle";
    root.append(
      svg(
        "text",
        { x: slotX(i, n) + (i === n - 1 ? slotW(n) : 0), y: HEIGHT - 4, class: `tick ${anchor}` },
        clockTime(at),
      ),
    );
  }
  return root;
}

const slotW = (n: number) => (WIDTH - LEFT) / Math.max(n, 1);
const slotX = (i: number, n: number) => LEFT + i * slotW(n);
const yOf = (value: number, top: number) => HEIGHT - BOTTOM - (value / top) * PLOT_H;

/** A headroom above the largest value, so the top tick is a round-ish number. */
function roundTop(max: number): number {
  if (max <= 0) return 1;
  const magnitude = 10 ** Math.floor(Math.log10(max));
  const step = [1, 2, 5, 10].find((s) => s * magnitude >= max) ?? 10;
  return step * magnitude;
}

/** Stacked bars: one bar per slot, split by series. */
export function stackedBars(f: ChartFrame, series: readonly ChartSeries[]): SVGSVGElement {
  const n = f.at.length;
  const totals = f.at.map((_, i) => series.reduce((sum, s) => sum + (s.values[i] ?? 0), 0));
  const top = roundTop(Math.max(0, ...totals));
  const root = frame(f, top);
  for (let i = 0; i < n; i++) {
    let y = HEIGHT - BOTTOM;
    for (const s of series) {
      const value = s.values[i] ?? 0;
      if (value <= 0) continue;
      const height = Math.max(1, (value / top) * PLOT_H);
      y -= height;
      const attrs = {
        x: slotX(i, n) + 0.5,
        y,
        width: Math.max(1, slotW(n) - 1),
        height,
        class: `bar ${seriesClass(s.index)}`,
      };
      root.append(svg("rect", attrs, `${s.label}: ${f.format(value)} at ${clockTime(f.at[i]!)}`));
    }
  }
  return root;
}

/** Lines: one per series, broken where a slot has no value. */
export function lines(f: ChartFrame, series: readonly ChartSeries[]): SVGSVGElement {
  const n = f.at.length;
  const max = Math.max(0, ...series.flatMap((s) => s.values.filter((v): v is number => v !== null)));
  const top = roundTop(max);
  const root = frame(f, top);
  for (const s of series) {
    let run: string[] = [];
    const flush = () => {
      if (run.length > 0)
        root.append(svg("polyline", { points: run.join(" "), class: `line ${seriesClass(s.index)}` }));
      run = [];
    };
    s.values.forEach((value, i) => {
      if (value === null) {
        flush();
        return;
      }
      const x = slotX(i, n) + slotW(n) / 2;
      const y = yOf(value, top);
      run.push(`${x.toFixed(1)},${y.toFixed(1)}`);
      root.append(
        svg(
          "circle",
          { cx: x, cy: y, r: 1.6, class: `dot ${seriesClass(s.index)}` },
          `${s.label}: ${f.format(value)} at ${clockTime(f.at[i]!)}`,
        ),
      );
    });
    flush();
  }
  return root;
}
