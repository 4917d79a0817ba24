import type { Operation } from "./history.ts";
import type { ChaosWorker } from "./topology.ts";

/**
 * A kill -9 timed to land on a burst of answers: BURST_READS reads of the worker's own keys at
 * once, and the SIGKILL as soon as KILL_AFTER_ANSWERS of them came back from that worker (or
 * after WAIT_MS, whatever came back). A worker answers a burst in a few turns of its event loop;
 * if its logs lagged its answers (written through an async stream, the `served-log-async`
 * mutant), the lines of answers already sent would still be in memory, and the checker names
 * each one (`unlogged-answer`). A kill at a random moment lands in that window a few times in
 * a hundred. The burst's reads are recorded like any other operation.
 */

export const BURST_READS = 32;
export const KILL_AFTER_ANSWERS = 4;
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
