/**
 * The availability chart of a chaos run: ok operations per second (0–100 %) over the run, each fault
 * a shaded span from its start to its healing, labelled by kind. A self-contained SVG (generic font,
 * no links), drawn for 1000×360.
 */

import type { Fault, History } from "./history.ts";
import type { SecondAvailability } from "./verdict.ts";

const WIDTH = 1000;
const HEIGHT = 360;
const PLOT = { left: 56, right: WIDTH - 16, top: 56, bottom: HEIGHT - 40 };
const LINE_COLOR = "#1f4e9c";

const FAULT_COLORS: Record<Fault["kind"], string> = {
  "kill-worker": "#d62728",
  "pause-worker": "#ff7f0e",
  "proxy-pinboard-redis": "#9467bd",
  "proxy-pinboard-worker": "#8c564b",
  "proxy-worker-store": "#e377c2",
  "redis-restart-empty": "#17becf",
  "cluster-failover": "#bcbd22",
  "kill-pinboard": "#7f7f7f",
  "pause-worker-edge": "#ffbb78",
  "clock-skew": "#98df8a",
  "clock-rate": "#2ca02c",
  "clock-rate-past-margin": "#006d2c",
  "proxy-heal-inflight": "#c49c94",
  "drain-worker": "#bcbd22",
  "wind-down-keys": "#17becf",
  "wind-down-namespace": "#1f77b4",
};

export function renderAvailabilitySvg(
  history: Pick<History, "faults" | "started" | "ended">,
  availability: readonly SecondAvailability[],
): string {
  const seconds = Math.max(1, availability.length);
  const x = (second: number) =>
    PLOT.left + (Math.min(seconds, Math.max(0, second)) / seconds) * (PLOT.right - PLOT.left);
  const y = (ratio: number) => PLOT.bottom - ratio * (PLOT.bottom - PLOT.top);
  const atMs = (ms: number) => x((ms - history.started) / 1000);
  const parts = [
    `<svg xmlns="http://www.w3.org/2000/svg" width="${WIDTH}" height="${HEIGHT}" viewBox="0 0 ${WIDTH} ${HEIGHT}" font-family="sans-serif" font-size="11">`,
    `<rect x="0" y="0" width="${WIDTH}" height="${HEIGHT}" fill="#ffffff"/>`,
    `<text x="${PLOT.left}" y="18" font-size="14" font-weight="bold">${escapeXml(title(history, seconds))}</text>`,
    ...history.faults.map((fault) => faultSpan(fault, atMs)),
    ...axes(seconds, x, y),
    availabilityPath(availability, x, y),
    // Over the line, so the line never hides a label.
    ...history.faults.map((fault) => faultLabel(fault, atMs)),
    ...legend(history.faults),
    "</svg>",
  ];
  return `${parts.join("\n")}\n`;
}

function title(history: Pick<History, "faults">, seconds: number): string {
  return `Availability per second (ok / all operations ended in it): ${seconds} s, ${history.faults.length} faults`;
}

function faultSpan(fault: Fault, x: (ms: number) => number): string {
  const from = x(fault.start);
  const width = Math.max(2, x(Math.max(fault.healed, fault.start)) - from);
  const color = FAULT_COLORS[fault.kind];
  const tooltip = `${labelOf(fault)} of ${fault.target}: ${fault.healed - fault.start} ms`;
  return `<rect class="fault" x="${round(from)}" y="${PLOT.top}" width="${round(width)}" height="${PLOT.bottom - PLOT.top}" fill="${color}" fill-opacity="0.18" stroke="${color}" stroke-opacity="0.5"><title>${escapeXml(tooltip)}</title></rect>`;
}

/** Down the span's left edge, haloed in white so it reads over the grid and the line. */
function faultLabel(fault: Fault, x: (ms: number) => number): string {
  const labelX = round(x(fault.start) + 3);
  const labelY = PLOT.top + 4;
  return `<text class="fault-label" x="${labelX}" y="${labelY}" font-size="10" fill="${FAULT_COLORS[fault.kind]}" stroke="#ffffff" stroke-width="3" paint-order="stroke" transform="rotate(90 ${labelX} ${labelY})">${escapeXml(labelOf(fault))}</text>`;
}

function labelOf(fault: Fault): string {
  return fault.mode === undefined ? fault.kind : `${fault.kind} (${fault.mode})`;
}

function axes(seconds: number, x: (second: number) => number, y: (ratio: number) => number): string[] {
  const lines = [
    `<line x1="${PLOT.left}" y1="${PLOT.bottom}" x2="${PLOT.right}" y2="${PLOT.bottom}" stroke="#333333"/>`,
    `<line x1="${PLOT.left}" y1="${PLOT.top}" x2="${PLOT.left}" y2="${PLOT.bottom}" stroke="#333333"/>`,
  ];
  for (const percent of [0, 25, 50, 75, 100]) {
    const at = round(y(percent / 100));
    lines.push(`<line x1="${PLOT.left}" y1="${at}" x2="${PLOT.right}" y2="${at}" stroke="#dddddd"/>`);
    lines.push(`<text x="${PLOT.left - 6}" y="${at + 4}" text-anchor="end">${percent}%</text>`);
  }
  const step = tickStep(seconds);
  for (let second = 0; second <= seconds; second += step) {
    const at = round(x(second));
    lines.push(`<line x1="${at}" y1="${PLOT.bottom}" x2="${at}" y2="${PLOT.bottom + 5}" stroke="#333333"/>`);
    lines.push(`<text x="${at}" y="${PLOT.bottom + 18}" text-anchor="middle">${second}</text>`);
  }
  lines.push(
    `<text x="${(PLOT.left + PLOT.right) / 2}" y="${HEIGHT - 6}" text-anchor="middle">seconds since start</text>`,
  );
  return lines;
}

/** At most about ten ticks, on round numbers of seconds. */
function tickStep(seconds: number): number {
  const steps = [1, 2, 5, 10, 15, 30, 60, 120, 300, 600, 900, 1800, 3600];
  return steps.find((step) => seconds / step <= 10) ?? Math.ceil(seconds / 10 / 3600) * 3600;
}

/** One point per second in the middle of it; a second without operations breaks the line. */
function availabilityPath(
  availability: readonly SecondAvailability[],
  x: (second: number) => number,
  y: (ratio: number) => number,
): string {
  let d = "";
  let drawing = false;
  for (const { second, ratio } of availability) {
    if (ratio === null) {
      drawing = false;
      continue;
    }
    d += `${drawing ? "L" : "M"}${round(x(second + 0.5))},${round(y(ratio))} `;
    drawing = true;
  }
  return `<path class="availability" d="${d.trim()}" fill="none" stroke="${LINE_COLOR}" stroke-width="2"/>`;
}

function legend(faults: readonly Fault[]): string[] {
  const kinds = [...new Set(faults.map((fault) => fault.kind))];
  const items = [
    `<line x1="${PLOT.left}" y1="36" x2="${PLOT.left + 18}" y2="36" stroke="${LINE_COLOR}" stroke-width="2"/>`,
    `<text x="${PLOT.left + 22}" y="40">availability</text>`,
  ];
  let at = PLOT.left + 110;
  for (const kind of kinds) {
    const color = FAULT_COLORS[kind];
    items.push(`<rect x="${at}" y="30" width="12" height="12" fill="${color}" fill-opacity="0.35" stroke="${color}"/>`);
    items.push(`<text x="${at + 16}" y="40">${escapeXml(kind)}</text>`);
    at += 22 + kind.length * 6.5;
  }
  return items;
}

function round(n: number): number {
  return Math.round(n * 10) / 10;
}

function escapeXml(text: string): string {
  return text.replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);
}
