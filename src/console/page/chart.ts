import type { Sample } from "./series.ts";

/**
 * A small stacked bar chart as SVG: one bar per sample, each split by series. Colours come from
 * console.css (`series-0` … `series-11`, one class per colour), never from a style attribute,
 * which the console's Content-Security-Policy would block.
 */

export const SERIES_COLOURS = 12;

/** The class that colours series `index` (a bar's fill, a legend swatch's background). */
export function seriesClass(index: number): string {
  return `series-${index % SERIES_COLOURS}`;
}

export interface ChartSeries {
  name: string;
  label: string;
  /** Which colour (seriesClass). */
  index: number;
}

const SVG = "http://www.w3.org/2000/svg";
const WIDTH = 360;
const HEIGHT = 80;
const SLOTS = 30;

function svg<K extends keyof SVGElementTagNameMap>(
  tag: K,
  attrs: Record<string, string | number>,
  title?: string,
): SVGElementTagNameMap[K] {
  const el = document.createElementNS(SVG, tag);
  for (const [name, value] of Object.entries(attrs)) el.setAttribute(name, String(value));
  if (title !== undefined) {
    const t = document.createElementNS(SVG, "title");
    t.textContent = title;
    el.append(t);
  }
  return el;
}

const total = (sample: Sample, series: ChartSeries[]) =>
  series.reduce((sum, s) => sum + (sample.rates[s.name] ?? 0), 0);

/** Bars of `samples` (rates per second), newest on the right; `format` writes a value for a bar's title. */
export function barChart(
  samples: readonly Sample[],
  series: ChartSeries[],
  label: string,
  format: (rate: number) => string,
): SVGSVGElement {
  const slots = Math.max(samples.length, SLOTS);
  const barWidth = WIDTH / slots;
  const top = Math.max(Number.MIN_VALUE, ...samples.map((s) => total(s, series)));
  const root = svg("svg", { viewBox: `0 0 ${WIDTH} ${HEIGHT}`, role: "img", "aria-label": label, class: "chart" });
  root.append(svg("line", { x1: 0, y1: HEIGHT - 0.5, x2: WIDTH, y2: HEIGHT - 0.5, class: "axis" }));
  samples.forEach((sample, i) => {
    let y = HEIGHT;
    const when = sample.seed ? "average since the node started" : `over ${Math.round(sample.seconds)} s`;
    for (const s of series) {
      const rate = sample.rates[s.name] ?? 0;
      if (rate <= 0) continue;
      const h = (rate / top) * (HEIGHT - 4);
      y -= h;
      const attrs = {
        x: (slots - samples.length + i) * barWidth + 1,
        y,
        width: Math.max(1, barWidth - 2),
        height: h,
        class: `bar ${seriesClass(s.index)}${sample.seed ? " seed" : ""}`,
      };
      root.append(svg("rect", attrs, `${s.label}: ${format(rate)}/s, ${when}`));
    }
  });
  return root;
}
