import { type ChildProcess, spawn } from "node:child_process";
import { appendFileSync } from "node:fs";
import { fileURLToPath } from "node:url";
import { reapOnExit } from "../../src/runtime/node/process/reap-on-exit.ts";

const ROOT = fileURLToPath(new URL("../../", import.meta.url));

/**
 * A child process of the campaign (a Pinboard node, a worker) that can be killed, paused, resumed
 * and started again with the same settings. Its output is kept (the last 20 kB) for the report of
 * a failed start and appended to `logPath` when given; every process is reaped when the harness
 * exits, however it exits.
 */
export class ManagedProcess {
  private child: ChildProcess | undefined;
  private output = "";
  /** Listeners of stdout lines (onLine), and the line being received. */
  private readonly lineListeners = new Set<(line: string) => void>();
  private partialLine = "";

  constructor(
    readonly name: string,
    private readonly entry: string,
    private readonly env: Record<string, string>,
    /** The line on stdout that says it is up, or undefined to wait on `ready()` instead. */
    private readonly readyLine?: RegExp,
    /** Where every run of the process appends its output. */
    private readonly logPath?: string,
  ) {}

  get pid(): number | undefined {
    return this.child?.pid;
  }

  get running(): boolean {
    return this.child !== undefined && this.child.exitCode === null && this.child.signalCode === null;
  }

  tail(): string {
    return this.output;
  }

  /** Starts it and waits for its ready line (or `ready`), at most `timeoutMs`. */
  async start(ready?: () => Promise<boolean>, timeoutMs = 30_000): Promise<void> {
    const child = spawn(process.execPath, ["--import", "tsx", this.entry], {
      cwd: ROOT,
      env: { PATH: process.env.PATH ?? "", HOME: process.env.HOME ?? "", ...this.env },
      stdio: ["ignore", "pipe", "pipe"],
    });
    reapOnExit(child);
    this.child = child;
    const logPath = this.logPath;
    const keep = (chunk: Buffer) => {
      this.output = (this.output + chunk.toString()).slice(-20_000);
      if (logPath) appendFileSync(logPath, chunk);
    };
    child.stdout?.on("data", keep);
    this.partialLine = "";
    child.stdout?.on("data", (chunk: Buffer) => this.emitLines(chunk.toString()));
    child.stderr?.on("data", keep);
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      if (!this.running) throw new Error(`${this.name} exited while starting:\n${this.output}`);
      if (this.readyLine?.test(this.output) || (ready && (await ready().catch(() => false)))) return;
      if (Date.now() > deadline) throw new Error(`${this.name} did not start within ${timeoutMs} ms:\n${this.output}`);
      await new Promise((r) => setTimeout(r, 100));
    }
  }

  /** SIGKILL, and waits until it is gone. */
  kill(): Promise<void> {
    return this.signalAndWait("SIGKILL");
  }

  /** SIGTERM (a graceful stop), SIGKILL after `graceMs`. */
  async stop(graceMs = 5000): Promise<void> {
    const kill = setTimeout(() => this.child?.kill("SIGKILL"), graceMs);
    this.resume();
    await this.signalAndWait("SIGTERM");
    clearTimeout(kill);
  }

  /** Calls `listener` with each line the process prints on stdout from now on; returns its removal. */
  onLine(listener: (line: string) => void): () => void {
    this.lineListeners.add(listener);
    return () => this.lineListeners.delete(listener);
  }

  /** Sends `signal` if it is running. */
  signal(signal: NodeJS.Signals): void {
    if (this.running) this.child!.kill(signal);
  }

  pause(): void {
    if (this.running) this.child!.kill("SIGSTOP");
  }

  resume(): void {
    if (this.running) this.child!.kill("SIGCONT");
  }

  private emitLines(text: string): void {
    const lines = (this.partialLine + text).split("\n");
    this.partialLine = lines.pop()!;
    for (const line of lines) for (const listener of this.lineListeners) listener(line);
  }

  private signalAndWait(signal: NodeJS.Signals): Promise<void> {
    const child = this.child;
    if (!child || !this.running) return Promise.resolve();
    return new Promise((resolve) => {
      child.once("exit", () => resolve());
      child.kill(signal);
    });
  }
}
