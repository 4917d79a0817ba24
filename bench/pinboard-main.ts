/**
 * The Pinboard process of the bench: the real Node entry (`startNode` from src/node.ts, exactly
 * what `npm start` runs) configured from the environment, plus a control channel on stdin so the
 * bench can CPU-profile a window of the run in-process (node:inspector, no --inspect port):
 *
 *   profile-start             → {"bench":"profiling"}
 *   profile-stop <file>       → {"bench":"profiled","file":…}   (a .cpuprofile, Chrome format)
 *   eld-reset / eld           → event-loop delay since the reset, how late a 10 ms timer fired:
 *                               {"bench":"eld","p50":…,"p99":…,"max":…} (ms)
 *   mem                       → process.memoryUsage() and V8 heap spaces in MB, and the GC pauses since
 *                               the last eld-reset by kind (count, total and max ms): {"bench":"mem",…}
 *   alloc-start / alloc-stop  → bytes allocated on the heap in between (alloc-meter.ts):
 *                               {"bench":"alloc","bytes":…,"collections":…}
 *
 * It prints {"bench":"ready","url":…} once serving, and stops when stdin closes or on SIGTERM.
 */
import { writeFileSync } from "node:fs";
import { Session } from "node:inspector/promises";
import { constants, monitorEventLoopDelay, PerformanceObserver } from "node:perf_hooks";
import { createInterface } from "node:readline";
import { getHeapSpaceStatistics } from "node:v8";
import { type RunningPinboard, startNode } from "../src/node.ts";
import { AllocationMeter, answerAllocation } from "./alloc-meter.ts";

function say(msg: Record<string, unknown>): void {
  process.stdout.write(`${JSON.stringify({ bench: msg.bench, ...msg })}\n`);
}

let running: RunningPinboard | undefined;
let stopping = false;
let heapProfileDone: (() => Promise<void>) | undefined;

function shutdown(code: number): void {
  if (stopping) return;
  stopping = true;
  void (async () => {
    const force = setTimeout(() => process.exit(code), 5000);
    force.unref();
    await heapProfileDone?.().catch(() => {});
    await running?.stop().catch(() => {});
    process.exit(code);
  })();
}

async function main(): Promise<void> {
  process.once("SIGTERM", () => shutdown(0));
  process.once("SIGINT", () => shutdown(0));
  // The bench holds our stdin: when it goes away, so do we.
  process.stdin.once("end", () => shutdown(0));
  process.stdin.once("close", () => shutdown(0));

  running = await startNode(process.env);
  const heapFile = process.env.BENCH_PINBOARD_HEAP_PROFILE;
  if (heapFile) {
    const heap = new Session();
    heap.connect();
    await heap.post("HeapProfiler.startSampling", {
      samplingInterval: 16384,
      includeObjectsCollectedByMajorGC: true,
      includeObjectsCollectedByMinorGC: process.env.BENCH_PINBOARD_HEAP_MINOR !== "0",
    } as never);
    heapProfileDone = async () => {
      const { profile } = await heap.post("HeapProfiler.stopSampling");
      writeFileSync(heapFile, JSON.stringify(profile));
    };
  }

  let session: Session | undefined;
  // The histogram holds whole intervals of a 10 ms timer; what the loop added is the rest.
  const ELD_RESOLUTION_MS = 10;
  const eld = monitorEventLoopDelay({ resolution: ELD_RESOLUTION_MS });
  eld.enable();
  const kinds: Record<number, string> = {
    [constants.NODE_PERFORMANCE_GC_MINOR]: "minor",
    [constants.NODE_PERFORMANCE_GC_MAJOR]: "major",
    [constants.NODE_PERFORMANCE_GC_INCREMENTAL]: "incremental",
    [constants.NODE_PERFORMANCE_GC_WEAKCB]: "weakcb",
  };
  let gc: Record<string, { count: number; totalMs: number; maxMs: number }> = {};
  new PerformanceObserver((list) => {
    for (const entry of list.getEntries()) {
      const kind = kinds[(entry as PerformanceEntry & { detail?: { kind?: number } }).detail?.kind ?? -1] ?? "other";
      const g = (gc[kind] ??= { count: 0, totalMs: 0, maxMs: 0 });
      g.count++;
      g.totalMs = Math.round((g.totalMs + entry.duration) * 10) / 10;
      g.maxMs = Math.max(g.maxMs, Math.round(entry.duration * 10) / 10);
    }
  }).observe({ entryTypes: ["gc"] });
  const allocation = new AllocationMeter();
  const lines = createInterface({ input: process.stdin });
  lines.on("line", (line) => {
    const [command = "", arg] = line.trim().split(/\s+/, 2);
    void (async () => {
      try {
        if (answerAllocation(allocation, command, say)) return;
        if (command === "eld-reset") {
          eld.reset();
          gc = {};
        } else if (command === "eld") {
          const ms = (ns: number) => Math.max(0, ns / 1e6 - ELD_RESOLUTION_MS);
          say({ bench: "eld", p50: ms(eld.percentile(50)), p99: ms(eld.percentile(99)), max: ms(eld.max) });
        } else if (command === "mem") {
          const mb = (n: number) => Math.round(n / 1e5) / 10;
          const usage = Object.fromEntries(Object.entries(process.memoryUsage()).map(([k, v]) => [k, mb(v)]));
          const spaces = Object.fromEntries(getHeapSpaceStatistics().map((s) => [s.space_name, mb(s.space_size)]));
          say({ bench: "mem", ...usage, spaces, gc });
        } else if (command === "profile-start") {
          session = new Session();
          session.connect();
          await session.post("Profiler.enable");
          await session.post("Profiler.setSamplingInterval", { interval: 200 });
          await session.post("Profiler.start");
          say({ bench: "profiling" });
        } else if (command === "profile-stop" && session && arg) {
          const { profile } = await session.post("Profiler.stop");
          await session.post("Profiler.disable");
          session.disconnect();
          session = undefined;
          writeFileSync(arg, JSON.stringify(profile));
          say({ bench: "profiled", file: arg });
        }
      } catch (err) {
        say({ bench: "error", message: err instanceof Error ? err.message : String(err) });
      }
    })();
  });

  say({ bench: "ready", url: running.url, pid: process.pid });
}

main().catch((err: unknown) => {
  console.error(`pinboard (bench) failed to start: ${err instanceof Error ? (err.stack ?? err.message) : String(err)}`);
  process.exit(1);
});
