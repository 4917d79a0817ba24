import type { AlarmFired, AlarmHistory, AlarmSet } from "./history-alarms.ts";
import { readJsonLines } from "./sync-log.ts";
import { REFUSED_BEFORE_FORWARD } from "./workload.ts";

/**
 * The alarm clients of the campaign: `clients` loops, each asking a random `/alarms/a…` key
 * (through a random node) to set an alarm of its own id DELAY_MS ahead, then pausing a little.
 * After the run, awaitAlarms waits until every acknowledged alarm has fired (the library
 * promises each fires at least once), or gives up after a while: check-alarms.ts reports the rest.
 */

export interface AlarmWorkloadOptions {
  nodes: string[];
  clients: number;
  keys: number;
  timeoutMs: number;
  random: () => number;
}

const DELAY_MS: [number, number] = [200, 1500];
const PAUSE_MS: [number, number] = [200, 600];

export class AlarmWorkload {
  readonly history: AlarmHistory = { sets: [], fired: [] };
  private nextId = 0;

  constructor(private readonly options: AlarmWorkloadOptions) {}

  keys(): string[] {
    return Array.from({ length: this.options.keys }, (_, i) => `/alarms/a${i}`);
  }

  async run(deadline: number): Promise<void> {
    await Promise.all(Array.from({ length: this.options.clients }, () => this.loop(deadline)));
  }

  private async loop(deadline: number): Promise<void> {
    while (Date.now() < deadline) {
      const keys = this.keys();
      await this.set(keys[Math.floor(this.options.random() * keys.length)]!);
      await sleep(this.between(...PAUSE_MS));
    }
  }

  private async set(key: string): Promise<AlarmSet> {
    const node = Math.floor(this.options.random() * this.options.nodes.length);
    const delay = this.between(...DELAY_MS);
    const start = Date.now();
    const op: AlarmSet = { alarm: `al${this.nextId++}`, key, node, due: start + delay, start, end: 0, outcome: "info" };
    this.history.sets.push(op);
    const octet = () => 1 + Math.floor(this.options.random() * 254);
    try {
      const res = await fetch(`${this.options.nodes[node]}${key}/set?alarm=${op.alarm}&in=${delay}`, {
        method: "POST",
        headers: { "x-forwarded-for": `10.${octet()}.${octet()}.${octet()}` },
        signal: AbortSignal.timeout(this.options.timeoutMs),
      });
      const text = await res.text();
      op.end = Date.now();
      const body = parse(text);
      if (res.status === 200) Object.assign(op, { outcome: "ok", epoch: body.epoch, worker: body.worker });
      else {
        op.error = `${res.status} ${body.error ?? body.detail ?? text.slice(0, 80)}`;
        if (REFUSED_BEFORE_FORWARD.has(`${res.status} ${body.error}`)) op.outcome = "fail";
      }
    } catch (err) {
      op.end = Date.now();
      op.error = err instanceof Error ? (err.cause instanceof Error ? err.cause.message : err.message) : String(err);
    }
    return op;
  }

  private between(min: number, max: number): number {
    return Math.floor(min + this.options.random() * (max - min));
  }
}

function parse(text: string): { epoch?: string; worker?: string; error?: string; detail?: string } {
  try {
    return JSON.parse(text);
  } catch {
    return {};
  }
}

/** Reads the alarm log back (missing: empty). */
export function readAlarmLog(path: string): AlarmFired[] {
  return readJsonLines<AlarmFired>(path);
}

/** Waits until every acknowledged alarm has a "fired" line in the log, at most `timeoutMs`. */
export async function awaitAlarms(history: AlarmHistory, logPath: string, timeoutMs: number): Promise<void> {
  const acknowledged = history.sets.filter((s) => s.outcome === "ok").map((s) => s.alarm);
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const fired = new Set(readAlarmLog(logPath).map((f) => f.alarm));
    if (acknowledged.every((alarm) => fired.has(alarm)) || Date.now() > deadline) return;
    await sleep(500);
  }
}

function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}
