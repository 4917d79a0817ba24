import { renameSync, writeFileSync } from "node:fs";
import {
  type ClockSetting,
  clockFromEnv,
  LEASE_RATE_MARGIN,
  rateInsideMargin,
  withRate,
  withStep,
} from "./chaos-clock.ts";
import type { FaultProxy } from "./fault-proxy.ts";
import type { Fault } from "./history.ts";
import { chooseEdgeTiming, parseRenewalLine, type Renewal } from "./lease-edge.ts";
import type { ManagedProcess } from "./processes.ts";
import { ResumeTimer } from "./resume-timer.ts";
import type { ChaosWorker, Topology } from "./topology.ts";

/**
 * The faults aimed at the edges (faults.ts picks them like the others):
 *  - pause-worker-edge: SIGSTOP right after a lease renewal, SIGCONT within ±500 ms of the end of
 *    the worker's own view of that lease (lease-edge.ts); the renewal's times come from the
 *    worker's stdout (worker-clock.ts), stamped by the worker itself, and the SIGCONT is sent by a
 *    thread of its own (resume-timer.ts); the aim and the result are recorded (leaseEdgeAimMs,
 *    leaseEdgeMs);
 *  - clock-skew, clock-rate, clock-rate-past-margin: the worker's injected clock steps by 1–5 s
 *    (and back at the heal), or runs at a rate inside the lease guard's 5 % margin, or past it;
 *    a rate fault heals to rate 1 keeping the drift it gathered (no step back);
 *  - proxy-heal-inflight: a partition of one of a worker's links that heals 100–900 ms after a
 *    request was first held in it, so held requests reach the worker (or its store) late.
 */

type FaultOf<K extends Fault["kind"]> = Fault & { kind: K };
type ClockKind = "clock-skew" | "clock-rate" | "clock-rate-past-margin";

/** Rates past the margin: slow ones let the lease guard trust too long, fast ones give up early. */
const PAST_MARGIN_RATES = [0.8, 0.85, 0.9, 1.1, 1.2];
/** How late the harness may see a renewal and still pause before the next heartbeat (ms). */
const FRESH_MS = 250;

export class EdgeFaults {
  private readonly clocks = new Map<string, ClockSetting>();
  private readonly timer = new ResumeTimer();

  constructor(
    private readonly topology: Topology,
    private readonly random: () => number,
    private readonly keysOf: (worker: string) => string[],
  ) {}

  async pauseAtLeaseEdge(worker: ChaosWorker): Promise<FaultOf<"pause-worker-edge">> {
    const kind = "pause-worker-edge";
    const renewal = await this.freshRenewal(worker);
    if (renewal === undefined) {
      const now = Date.now();
      return { kind, target: worker.id, mode: "no renewal seen: not paused", start: now, healed: now };
    }
    const keys = this.keysOf(worker.id);
    worker.process.pause();
    const start = Date.now();
    const timing = chooseEdgeTiming(renewal, this.random);
    const healed = await this.resumeAt(worker.process, timing.resumeAt);
    return {
      kind,
      target: worker.id,
      mode: `aimed ${signed(timing.offsetMs)} ms from the lease view's end, renewal seen ${start - renewal.at} ms before the pause`,
      start,
      healed,
      keys,
      leaseEdgeMs: healed - timing.edge,
      leaseEdgeAimMs: timing.offsetMs,
      pauseMs: healed - start,
    };
  }

  async clockFault(kind: ClockKind, worker: ChaosWorker): Promise<FaultOf<ClockKind>> {
    const start = Date.now();
    const before = this.clockOf(worker);
    const step = kind === "clock-skew" ? (this.random() < 0.5 ? -1 : 1) * this.between(1000, 5000) : 0;
    const rate =
      kind === "clock-rate"
        ? Math.round((1 + (this.random() * 2 - 1) * (LEASE_RATE_MARGIN - 0.02)) * 1000) / 1000
        : kind === "clock-rate-past-margin"
          ? PAST_MARGIN_RATES[Math.floor(this.random() * PAST_MARGIN_RATES.length)]!
          : before.rate;
    this.setClock(worker, step !== 0 ? withStep(before, step, start) : withRate(before, rate, start));
    await sleep(this.between(3000, 8000));
    const during = this.clockOf(worker);
    this.setClock(worker, step !== 0 ? withStep(during, -step, Date.now()) : withRate(during, 1, Date.now()));
    const margin = rateInsideMargin(rate) ? "inside" : "past";
    return {
      kind,
      target: worker.id,
      mode: step !== 0 ? `step ${signed(step)} ms, back at the heal` : `rate ${rate} (${margin} the 5 % margin)`,
      start,
      healed: Date.now(),
      clockRate: rate,
      clockStepMs: step,
    };
  }

  async healInFlight(proxy: FaultProxy): Promise<FaultOf<"proxy-heal-inflight">> {
    const kind = "proxy-heal-inflight";
    proxy.setMode("drop");
    const start = Date.now();
    const heldAt = await waitFor(() => proxy.heldTowardsTarget() > 0, 4000);
    if (heldAt === undefined) {
      proxy.setMode("pass");
      return { kind, target: proxy.name, mode: "drop: no request in flight in 4 s", start, healed: Date.now() };
    }
    await sleep(this.between(100, 900));
    const heldChunks = proxy.heldTowardsTarget();
    proxy.setMode("pass");
    const healed = Date.now();
    return {
      kind,
      target: proxy.name,
      mode: `drop, healed ${healed - heldAt} ms after a request was first held`,
      start,
      healed,
      heldChunks,
    };
  }

  /** Resumes `process` at `at` from the timer's thread (from here if that fails); returns when. */
  private async resumeAt(process: ManagedProcess, at: number): Promise<number> {
    const pid = process.pid;
    const sentAt = pid === undefined ? undefined : await this.timer.resumeAt(pid, at).catch(() => undefined);
    if (sentAt === undefined) await sleepUntil(at);
    process.resume(); // a no-op once the thread's SIGCONT arrived
    return sentAt ?? Date.now();
  }

  /**
   * The next renewal seen within FRESH_MS of its answer (a loaded harness may read the line late;
   * the pause must start before the next heartbeat leaves, a third of the TTL later).
   */
  private async freshRenewal(worker: ChaosWorker): Promise<Renewal | undefined> {
    const deadline = Date.now() + 3 * this.topology.options.leaseTtlMs;
    while (Date.now() < deadline) {
      const renewal = await nextRenewal(worker.process, deadline - Date.now());
      if (renewal !== undefined && Date.now() - renewal.at <= FRESH_MS) return renewal;
    }
    return undefined;
  }

  private clockOf(worker: ChaosWorker): ClockSetting {
    return this.clocks.get(worker.id) ?? clockFromEnv(process.env, Date.now());
  }

  /** Writes the worker's clock file (whole, by rename) and has it read again. */
  private setClock(worker: ChaosWorker, setting: ClockSetting): void {
    this.clocks.set(worker.id, setting);
    writeFileSync(`${worker.clockFile}.next`, JSON.stringify(setting));
    renameSync(`${worker.clockFile}.next`, worker.clockFile);
    worker.process.signal("SIGUSR2");
  }

  private between(min: number, max: number): number {
    return Math.floor(min + this.random() * (max - min));
  }
}

/** The next renewal `process` prints, or undefined after `timeoutMs`. */
function nextRenewal(process: ManagedProcess, timeoutMs: number): Promise<Renewal | undefined> {
  return new Promise((resolve) => {
    const timer = setTimeout(() => {
      stop();
      resolve(undefined);
    }, timeoutMs);
    const stop = process.onLine((line) => {
      const renewal = parseRenewalLine(line);
      if (renewal === undefined) return;
      clearTimeout(timer);
      stop();
      resolve(renewal);
    });
  });
}

/** Sleeps until `at` (Date.now()), the last milliseconds spun, so the timer's lateness stays small. */
async function sleepUntil(at: number): Promise<void> {
  const SPIN_MS = 50;
  if (at - Date.now() > SPIN_MS) await sleep(at - Date.now() - SPIN_MS);
  while (Date.now() < at) {
    /* spin */
  }
}

/** Polls `condition` every 5 ms; resolves to when it first held, or undefined after `timeoutMs`. */
async function waitFor(condition: () => boolean, timeoutMs: number): Promise<number | undefined> {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    if (condition()) return Date.now();
    await sleep(5);
  }
  return undefined;
}

function signed(ms: number): string {
  return ms >= 0 ? `+${ms}` : String(ms);
}

function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}
