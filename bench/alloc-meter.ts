import { GCProfiler, getHeapStatistics } from "node:v8";

/**
 * Bytes a process allocated on V8's heap over a window, for a bench child (Pinboard, the plain
 * proxy) to report per request. V8 keeps no running total in Node 20, but its GC profiler records
 * the used heap before and after every collection: what the heap grew by between collections,
 * plus its growth since the last one, is what was allocated. Memory freed by concurrent sweeping
 * between collections is not seen, so the figure is a lower bound, close for a window whose
 * collections are scavenges (a forward's objects die young).
 */
export class AllocationMeter {
  private profiler: GCProfiler | undefined;
  private startUsed = 0;

  start(): void {
    this.profiler?.stop();
    this.startUsed = getHeapStatistics().used_heap_size;
    this.profiler = new GCProfiler();
    this.profiler.start();
  }

  /** Bytes allocated since start(), and the collections seen; null when not started. */
  stop(): { bytes: number; collections: number } | null {
    const profiler = this.profiler;
    if (!profiler) return null;
    this.profiler = undefined;
    const endUsed = getHeapStatistics().used_heap_size;
    const { statistics } = profiler.stop();
    let bytes = 0;
    let last = this.startUsed;
    for (const gc of statistics) {
      bytes += gc.beforeGC.heapStatistics.usedHeapSize - last;
      last = gc.afterGC.heapStatistics.usedHeapSize;
    }
    bytes += endUsed - last;
    return { bytes, collections: statistics.length };
  }
}

/** Answers `alloc-start` and `alloc-stop` lines of a bench child's stdin channel; false for other lines. */
export function answerAllocation(
  meter: AllocationMeter,
  command: string,
  say: (message: Record<string, unknown>) => void,
): boolean {
  if (command === "alloc-start") {
    meter.start();
    say({ bench: "alloc-started" });
    return true;
  }
  if (command === "alloc-stop") {
    say({ bench: "alloc", ...(meter.stop() ?? { bytes: null, collections: 0 }) });
    return true;
  }
  return false;
}
