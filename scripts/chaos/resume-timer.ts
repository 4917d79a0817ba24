import { Worker } from "node:worker_threads";

/**
 * SIGCONT to a process at a set time (Date.now() ms), from a thread of its own: the harness's
 * event loop, busy with the workload's clients, fired its timers up to 160 ms late on a loaded
 * machine, while an edge-timed pause must end within a few ms of its aim. The thread sleeps to
 * SPIN_MS before the time, spins to it, signals, and answers when it did; it runs at a higher
 * priority where it may, since under CPU contention (other processes) a woken thread also waited
 * for a core. One thread serves every pause; it does not keep the harness alive.
 */

const SPIN_MS = 40;
/** The thread's nice value when the harness may raise it (root, as in CI): wakes on time under load. */
const NICE = -10;

const THREAD = `
const { parentPort } = require("node:worker_threads");
try {
  // This thread alone (its Linux thread id) gets a higher priority, where allowed (root).
  const tid = Number(require("node:fs").readlinkSync("/proc/thread-self").split("/").pop());
  require("node:os").setPriority(tid, ${NICE});
} catch {}
parentPort.on("message", ({ id, pid, at }) => {
  const fire = () => {
    while (Date.now() < at) {}
    let error;
    try { process.kill(pid, "SIGCONT"); } catch (err) { error = String(err); }
    parentPort.postMessage({ id, sentAt: Date.now(), error });
  };
  setTimeout(fire, Math.max(0, at - Date.now() - ${SPIN_MS}));
});
`;

interface Answer {
  id: number;
  sentAt: number;
  error?: string;
}

export class ResumeTimer {
  private thread: Worker | undefined;
  private next = 0;
  private readonly waiting = new Map<number, (answer: Answer) => void>();

  /** Resolves to when the SIGCONT was sent to `pid` (at or just after `at`). */
  resumeAt(pid: number, at: number): Promise<number> {
    const thread = this.start();
    const id = ++this.next;
    return new Promise((resolve, reject) => {
      this.waiting.set(id, (answer) =>
        answer.error === undefined ? resolve(answer.sentAt) : reject(new Error(answer.error)),
      );
      thread.postMessage({ id, pid, at });
    });
  }

  private start(): Worker {
    if (this.thread) return this.thread;
    const thread = new Worker(THREAD, { eval: true });
    thread.on("message", (answer: Answer) => {
      this.waiting.get(answer.id)?.(answer);
      this.waiting.delete(answer.id);
    });
    thread.unref();
    this.thread = thread;
    return thread;
  }
}
