import type { Operation } from "./history.ts";
import type { ChaosWorker } from "./topology.ts";

/**
 * A kill -9 timed to land on a burst of answers: BURST_READS reads of the worker's own keys at
 * once, and the SIGKILL once KILL_AFTER_ANSWERS of them came back from that worker (or after
 * WAIT_MS, whatever came back), while the rest keep it busy. If its logs lagged its answers
 * (written through an async stream, the `served-log-async` mutant), the lines of answers it sent
 * in its last turns would still be in memory: a busy event loop gets to the stream's completions
 * only between turns, so the window lasts as long as a turn, and the checker names each such
 * answer (`unlogged-answer`). A kill at a random moment of a lightly loaded worker lands in that
 * window a few times in a hundred. The burst's reads are recorded like any other operation.
 */

export const BURST_READS = 128;
export const KILL_AFTER_ANSWERS = 32;
const WAIT_MS = 1500;

export type ReadKey = (key: string) => Promise<Operation>;

export async function killOnBurst(worker: ChaosWorker, keys: readonly string[], read: ReadKey): Promise<void> {
  if (keys.length === 0) return worker.process.kill();
  let answered = 0;
  let fire!: () => void;
  const killed = new Promise<void>((resolve) => (fire = resolve));
  const timer = setTimeout(fire, WAIT_MS);
  const reads: Promise<void>[] = Array.from({ length: BURST_READS }, (_, i) =>
    read(keys[i % keys.length]!).then((op) => {
      if (op.outcome === "ok" && op.worker === worker.id && ++answered >= KILL_AFTER_ANSWERS) fire();
    }),
  );
  await killed;
  clearTimeout(timer);
  await worker.process.kill();
  // The rest end on their own (each has the workload's timeout); the fault goes on meanwhile.
  void Promise.all(reads);
}
