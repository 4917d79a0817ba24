/**
 * How a load scenario is measured: in windows, interleaved in rounds with the scenarios it is
 * compared to (direct, plain, nginx, pinboard-hot, … one window each per round), so a machine
 * whose load drifts during the run skews all of them alike instead of whichever ran during the
 * drift; after the first round the order is shuffled (the same way every run), and a row is the
 * median of its rounds. Only the first round has a warm-up (1 s): later rounds find every front
 * warm. Around each window: Redis commandstats (reset after the warm-up) and, when the load goes
 * through Pinboard, its event-loop delay. Optionally a CPU profile of Pinboard over one extra
 * window, so the measured windows carry no profiler overhead.
 */
import { mkdirSync } from "node:fs";
import { join } from "node:path";
import type { Redis } from "ioredis";
import { busyStretches } from "./busy-stretches.ts";
import type { Child } from "./children.ts";
import { combine, type LoadSpec, loadWindow, type Window } from "./load.ts";
import { type ProfileSummary, summariseProfile } from "./profile-summary.ts";
import { type CommandStat, commandStats, describeCommands, resetRedisStats, slowLog } from "./redis-stats.ts";
import type { ScenarioResult } from "./report.ts";

export interface RunnerContext {
  admin: Redis;
  pinboard: { child: Child; pid: number };
  /** Children that answer alloc-start / alloc-stop (alloc-meter.ts): Pinboard and the plain proxy. */
  metered: Array<{ child: Child; pid: number }>;
  connections: number;
  /** Measured seconds per scenario, split over the rounds in whole seconds (wrk's unit). */
  durationS: number;
  log: (msg: string) => void;
}

interface Tally {
  windows: Window[];
  commands: Record<string, CommandStat>;
  slow: Array<{ usec: number; command: string }>;
  loop: { p50: number; p99: number; max: number } | null;
  /** Heap bytes the proxy allocated over the measured windows, and the requests they served. */
  allocated: { bytes: number; requests: number } | null;
}

/** Seconds per window: the scenario's seconds over its rounds, whole, at least 1. */
export const windowSeconds = (durationS: number, rounds: number): number => Math.max(1, Math.round(durationS / rounds));

/**
 * The order of one round: as given in the first, then a fixed shuffle per round, so that no row
 * always runs right after the same other one (a window leaves work behind: the worker's garbage,
 * Redis' buffers) and the same rows do not always start a round.
 */
export function orderOf<T>(specs: T[], round: number): T[] {
  const out = specs.slice();
  if (round === 0) return out;
  let seed = Math.imul(round, 2654435761) >>> 0;
  const random = () => (seed = (Math.imul(seed, 1664525) + 1013904223) >>> 0) / 2 ** 32;
  for (let i = out.length - 1; i > 0; i--) {
    const j = Math.floor(random() * (i + 1));
    [out[i], out[j]] = [out[j]!, out[i]!];
  }
  return out;
}

export class ScenarioRunner {
  /** Per scenario: what Redis did per request (commandstats), for the report. */
  readonly redisDetail: Record<string, { commands: string; slowlog: Array<{ usec: number; command: string }> }> = {};

  constructor(private readonly ctx: RunnerContext) {}

  /** Runs `specs` in `rounds` interleaved rounds of `durationS` in all (default: the context's); one combined row per spec, in order. */
  async rounds(specs: LoadSpec[], rounds: number, durationS = this.ctx.durationS): Promise<ScenarioResult[]> {
    const tallies = new Map<string, Tally>(
      specs.map((s) => [s.name, { windows: [], commands: {}, slow: [], loop: null, allocated: null }]),
    );
    const perWindow = windowSeconds(durationS, rounds);
    for (let round = 0; round < rounds; round++) {
      for (const spec of orderOf(specs, round)) {
        const how = spec.rate ? `paced at ${spec.rate} req/s` : "wrk";
        this.ctx.log(
          `${spec.name}${rounds > 1 ? ` (round ${round + 1}/${rounds})` : ""}: ${perWindow} s, ${how}, ${this.ctx.connections} connections`,
        );
        await this.window(spec, tallies.get(spec.name)!, round === 0 ? 1 : 0, perWindow);
      }
    }
    return specs.map((spec) => this.row(spec, tallies.get(spec.name)!));
  }

  private async window(spec: LoadSpec, tally: Tally, warmupS: number, durationS: number): Promise<void> {
    const { admin, pinboard } = this.ctx;
    const onPinboard = spec.pids.proxy === pinboard.pid;
    const metered = this.ctx.metered.find((m) => m.pid === spec.pids.proxy);
    const w = await loadWindow(spec, {
      connections: this.ctx.connections,
      durationS,
      warmupS,
      beforeMeasure: async () => {
        if (onPinboard) pinboard.child.send("eld-reset");
        if (metered) {
          metered.child.send("alloc-start");
          await metered.child.next((m) => m.bench === "alloc-started");
        }
        await resetRedisStats(admin);
      },
    });
    tally.windows.push(w);
    if (metered) {
      metered.child.send("alloc-stop");
      const { bytes } = await metered.child.next<{ bytes: number | null }>((m) => m.bench === "alloc");
      if (bytes !== null) {
        const sum = (tally.allocated ??= { bytes: 0, requests: 0 });
        sum.bytes += bytes;
        sum.requests += w.requests;
      }
    }
    for (const [cmd, s] of Object.entries(await commandStats(admin))) {
      const t = (tally.commands[cmd] ??= { calls: 0, usecPerCall: 0 });
      const usec = t.calls * t.usecPerCall + s.calls * s.usecPerCall;
      t.calls += s.calls;
      t.usecPerCall = t.calls ? usec / t.calls : 0;
    }
    tally.slow.push(...(await slowLog(admin)));
    if (onPinboard) {
      pinboard.child.send("eld");
      const { p50, p99, max } = await pinboard.child.next<{ p50: number; p99: number; max: number }>(
        (m) => m.bench === "eld",
      );
      // The worst window: a stall in any round shows.
      tally.loop = tally.loop
        ? { p50: Math.max(tally.loop.p50, p50), p99: Math.max(tally.loop.p99, p99), max: Math.max(tally.loop.max, max) }
        : { p50, p99, max };
      pinboard.child.send("mem");
      const mem = await pinboard.child.next((m) => m.bench === "mem");
      const { bench: _, ...usage } = mem;
      this.ctx.log(`  ${spec.name}: Pinboard memory after the window (MB) ${JSON.stringify(usage)}`);
    }
  }

  private row(spec: LoadSpec, tally: Tally): ScenarioResult {
    const row = combine(spec, tally.windows);
    // Only when the scenario itself drives the scripts; otherwise it is the heartbeats' figure.
    const evalsha = tally.commands.evalsha;
    row.redisUsecPerEvalsha = evalsha && evalsha.calls >= 0.5 * row.requests ? evalsha.usecPerCall : null;
    if (tally.loop) row.eventLoopDelayMs = tally.loop;
    if (tally.allocated?.requests) row.allocatedBytesPerRequest = tally.allocated.bytes / tally.allocated.requests;
    this.redisDetail[spec.name] = {
      commands: describeCommands(tally.commands, row.requests),
      slowlog: tally.slow.sort((a, b) => b.usec - a.usec).slice(0, 5),
    };
    this.ctx.log(
      `${row.name}: ${row.rps.toFixed(0)} req/s, p50 ${row.p50Ms?.toFixed(2)} ms, p99 ${row.p99Ms?.toFixed(2)} ms, non-2xx ${row.non2xx}, errors ${row.errors}`,
    );
    return row;
  }

  /**
   * One extra window of `spec` with Pinboard's CPU profiler on; the profile's summary, and for a
   * paced window its long tasks (what a request arriving during one waits for).
   */
  async profile(spec: LoadSpec, dir: string, name: string): Promise<ProfileSummary> {
    const { pinboard } = this.ctx;
    mkdirSync(dir, { recursive: true });
    const file = join(dir, `${name}.cpuprofile`);
    const seconds = windowSeconds(this.ctx.durationS, 1);
    this.ctx.log(`${spec.name}: profiling Pinboard over one more ${seconds} s window`);
    pinboard.child.send("profile-start");
    await pinboard.child.next((m) => m.bench === "profiling");
    await loadWindow(spec, { connections: this.ctx.connections, durationS: seconds, warmupS: 0 });
    pinboard.child.send(`profile-stop ${file}`);
    await pinboard.child.next((m) => m.bench === "profiled", 60_000);
    const summary = summariseProfile(file);
    return spec.rate ? { ...summary, longTasks: busyStretches(file) } : summary;
  }
}
