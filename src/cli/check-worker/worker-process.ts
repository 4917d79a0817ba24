import { type ChildProcess, spawn } from "node:child_process";
import { reapOnExit } from "../../runtime/node/process/reap-on-exit.ts";

/** Workers started and not yet stopped: an interrupted check stops them (stopWorkers). */
const running = new Set<WorkerProcess>();

/** Stops every worker this process started: on SIGINT or SIGTERM, before it exits. */
export async function stopWorkers(graceMs: number): Promise<void> {
  await Promise.all([...running].map((worker) => worker.stop(graceMs)));
}

/** The most output lines of the worker kept, to show when it never registered. */
const KEPT_LINES = 40;

/**
 * The worker under check, started from the command after `--` with PINBOARD_URL pointing at the
 * checker's registry and PINBOARD_WORKER_TOKEN set (the names docs/worker-library.md and
 * examples/worker.ts read). It runs in a process group of its own, so that stopping it stops what
 * it started (`npx tsx …` is a chain of processes).
 */
export class WorkerProcess {
  private readonly child: ChildProcess;
  private readonly lines: string[] = [];
  exit: { code: number | null; signal: string | null } | null = null;

  constructor(command: readonly string[], env: Record<string, string>, onExit: () => void) {
    this.child = spawn(command[0]!, command.slice(1), {
      env: { ...process.env, ...env },
      stdio: ["ignore", "pipe", "pipe"],
      detached: true,
    });
    reapOnExit(this.child);
    running.add(this);
    this.child.on("error", (err) => this.keep(`cannot start: ${err.message}`));
    // Its output is complete once its pipes close; a process it left behind may hold them open.
    this.child.on("exit", (code, signal) => {
      this.exit = { code, signal };
      running.delete(this);
      setTimeout(onExit, 500).unref();
    });
    this.child.on("close", onExit);
    for (const stream of [this.child.stdout!, this.child.stderr!]) {
      let partial = "";
      stream.setEncoding("utf8");
      stream.on("data", (text: string) => {
        const parts = (partial + text).split("\n");
        partial = parts.pop()!;
        for (const line of parts) this.keep(line);
      });
    }
  }

  /** The last lines the worker printed (stdout and stderr, interleaved as they came). */
  output(): string[] {
    return [...this.lines];
  }

  private keep(line: string): void {
    this.lines.push(line.length > 400 ? `${line.slice(0, 400)}…` : line);
    if (this.lines.length > KEPT_LINES) this.lines.shift();
  }

  /** SIGTERM to its process group (a graceful stop), SIGKILL after `graceMs`. */
  async stop(graceMs = 5000): Promise<void> {
    if (this.exit !== null || this.child.pid === undefined) return;
    const exited = new Promise<void>((resolve) => this.child.once("exit", () => resolve()));
    this.signal("SIGTERM");
    const timer = setTimeout(() => this.signal("SIGKILL"), graceMs);
    await exited;
    clearTimeout(timer);
  }

  private signal(signal: NodeJS.Signals): void {
    try {
      process.kill(-this.child.pid!, signal);
    } catch {
      // Already gone.
    }
  }
}
