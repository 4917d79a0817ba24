/** A small bar chart as SVG: one bar per sample, each split by outcome. */

const COLORS = [
  "#d9480f",
  "#1971c2",
  "#2f9e44",
  "#ae3ec9",
  "#f08c00",
  "#0c8599",
  "#c2255c",
  "#5c940d",
  "#495057",
  "#e8590c",
  "#3b5bdb",
  "#862e9c",
];

export interface Sample {
  at: number;
  counts: Record<string, number>;
}

const SVG = "http://www.w3.org/2000/svg";

function svg<K extends keyof SVGElementTagNameMap>(
  tag: K,
  attrs: Record<string, string | number>,
): SVGElementTagNameMap[K] {
  const el = document.createElementNS(SVG, tag);
  for (const [name, value] of Object.entries(attrs)) el.setAttribute(name, String(value));
  return el;
}

export function colorOf(outcome: string, outcomes: string[]): string {
  return COLORS[outcomes.indexOf(outcome) % COLORS.length]!;
}

export function barChart(samples: Sample[], outcomes: string[], label: string): SVGSVGElement {
  const width = 360;
  const height = 80;
  const slots = Math.max(samples.length, 30);
  const barWidth = width / slots;
  const top = Math.max(1, ...samples.map((s) => Object.values(s.counts).reduce((a, b) => a + b, 0)));
  const root = svg("svg", { viewBox: `0 0 ${width} ${height}`, role: "img", "aria-label": label, class: "chart" });
  root.append(svg("line", { x1: 0, y1: height - 0.5, x2: width, y2: height - 0.5, class: "axis" }));
  samples.forEach((sample, i) => {
    let y = height;
    for (const outcome of outcomes) {
      const n = sample.counts[outcome] ?? 0;
      if (n === 0) continue;
      const h = (n / top) * (height - 4);
      y -= h;
      const bar = svg("rect", {
        x: (slots - samples.length + i) * barWidth + 1,
        y,
        width: Math.max(1, barWidth - 2),
        height: h,
        fill: colorOf(outcome, outcomes),
      });
      const title = svg("title", {});
      title.textContent = `${outcome}: ${n}`;
      bar.append(title);
      root.append(bar);
    }
  });
  return root;
}
