/**
 * Times as an operator reads them: relative to now ("12 s ago", "in 3 min") with the viewer's
 * local date and time in the element's title and datetime, never raw epoch milliseconds.
 */

import { h } from "./dom.ts";

/** "45 s", "3 min", "2 h 5 min", "3 d 4 h". */
export function duration(ms: number): string {
  const s = Math.max(0, Math.round(ms / 1000));
  if (s < 90) return `${s} s`;
  const m = Math.round(s / 60);
  if (m < 90) return `${m} min`;
  const hours = Math.floor(m / 60);
  if (hours < 48) return `${hours} h ${m % 60} min`;
  return `${Math.floor(hours / 24)} d ${hours % 24} h`;
}

/** "12 s ago", "in 3 min", "now" (within a second). */
export function relative(at: number, now: number): string {
  const delta = at - now;
  if (Math.abs(delta) < 1000) return "now";
  return delta < 0 ? `${duration(-delta)} ago` : `in ${duration(delta)}`;
}

/** The viewer's local date and time, with seconds. */
export function localTime(at: number): string {
  return new Date(at).toLocaleString(undefined, {
    year: "numeric",
    month: "short",
    day: "numeric",
    hour: "2-digit",
    minute: "2-digit",
    second: "2-digit",
  });
}

/** The viewer's local clock time of day, "14:05", for chart axes. */
export function clockTime(at: number): string {
  return new Date(at).toLocaleTimeString(undefined, { hour: "2-digit", minute: "2-digit" });
}

/** A <time> element: relative text, local time on hover and for assistive technology. */
export function timeAgo(at: number, now: number): HTMLTimeElement {
  return h("time", { datetime: new Date(at).toISOString(), title: localTime(at) }, relative(at, now));
}

/** Keys whose number is a time (ms): activatedAt, deadlineAt, ejectedUntil, degradedSince, alarm. */
const TIME_KEY = /(At|Until|Since|^alarm)$/;

/** A value shown as it came (a worker's stats, an entry's detail), its times in local time. */
export function readableValue(key: string, value: unknown): unknown {
  return typeof value === "number" && TIME_KEY.test(key) && value > 1e11 ? localTime(value) : value;
}

/** JSON with every time in local time, for raw views (a worker's stats). */
export function readableJson(value: unknown): string {
  return JSON.stringify(value, (key, v) => readableValue(key, v), 2);
}
