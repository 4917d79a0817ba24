/**
 * Every process the bench starts goes through here, so none outlives it: children are tracked
 * by pid and SIGKILLed (with any process they spawned, e.g. Miniflare's workerd) when the bench
 * exits for any reason it can observe: normal end, error, SIGINT/SIGTERM, uncaught exception.
 *
 * Bench children (bench/*-main.ts) speak a small line protocol: the parent writes commands on
 * stdin, the child prints JSON lines on stdout; anything else it prints is kept as a log tail
 * for error messages. A bench child exits when its stdin closes, so even a SIGKILLed bench
 * leaves none of them behind.
 */

import { type ChildProcess, spawn } from "node:child_process";
import { createWriteStream } from "node:fs";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { descendantsOf } from "./proc-stats.ts";

export const ROOT = fileURLToPath(new URL("../", import.meta.url));

export interface Child {
  name: string;
  pid: number;
  process: ChildProcess;
  /** Resolves with the first JSON line for which `match` is true. */
  next<T = Record<string, unknown>>(match: (msg: Record<string, unknown>) => boolean, timeoutMs?: number): Promise<T>;
  /** Writes one command line on the child's stdin. */
  send(command: string): void;
  /** Last lines the child printed that were not JSON. */
  log(): string;
  /** SIGTERM, SIGKILL after `graceMs`; resolves once the child is gone. */
  stop(graceMs?: number): Promise<void>;
}

const live = new Set<ChildProcess>();

/** Spawns `node --import tsx <script>` from the repository root; a compiled `.js` script runs on plain node. */
export function spawnNode(name: string, script: string, env: Record<string, string>, nodeArgs: string[] = []): Child {
  const loader = script.endsWith(".js") ? [] : ["--import", "tsx"];
  const child = spawn(process.execPath, [...nodeArgs, ...loader, script], {
    cwd: ROOT,
    env: { PATH: process.env.PATH ?? "", HOME: process.env.HOME ?? "", ...env },
    stdio: ["pipe", "pipe", "pipe"],
  });
  if (child.pid === undefined) throw new Error(`${name}: spawn failed`);
  live.add(child);
  child.once("exit", () => live.delete(child));
  child.stdin?.on("error", () => {});

  let tail = "";
  const keep = (text: string) => (tail = (tail + text).slice(-6000));
  const messages: Record<string, unknown>[] = [];
  const waiters: Array<{
    match: (m: Record<string, unknown>) => boolean;
    resolve: (m: Record<string, unknown>) => void;
  }> = [];
  let buffered = "";
  child.stdout?.on("data", (chunk: Buffer) => {
    buffered += chunk.toString();
    let nl: number;
    while ((nl = buffered.indexOf("\n")) >= 0) {
      const line = buffered.slice(0, nl);
      buffered = buffered.slice(nl + 1);
      let msg: Record<string, unknown> | undefined;
      if (line.startsWith('{"bench"')) {
        try {
          msg = JSON.parse(line) as Record<string, unknown>;
        } catch {
          msg = undefined;
        }
      }
      if (!msg) {
        keep(`${line}\n`);
        continue;
      }
      const i = waiters.findIndex((w) => w.match(msg!));
      if (i >= 0) waiters.splice(i, 1)[0]!.resolve(msg);
      else messages.push(msg);
    }
  });
  child.stderr?.on("data", (chunk: Buffer) => keep(chunk.toString()));
  // BENCH_CHILD_LOG_DIR=<dir>: everything each child prints also goes to <dir>/<name>.log.
  const logDir = process.env.BENCH_CHILD_LOG_DIR;
  if (logDir) {
    const file = createWriteStream(join(logDir, `${name}.log`), { flags: "a" });
    child.stdout?.pipe(file);
    child.stderr?.pipe(file);
  }

  const exited = new Promise<void>((resolve) => child.once("exit", () => resolve()));
  const gone = () => child.exitCode !== null || child.signalCode !== null;

  return {
    name,
    pid: child.pid,
    process: child,
    next<T>(match: (msg: Record<string, unknown>) => boolean, timeoutMs = 60_000): Promise<T> {
      const i = messages.findIndex(match);
      if (i >= 0) return Promise.resolve(messages.splice(i, 1)[0] as T);
      return new Promise<T>((resolve, reject) => {
        const waiter = { match, resolve: (m: Record<string, unknown>) => finish(() => resolve(m as T)) };
        const timer = setTimeout(
          () => finish(() => reject(new Error(`${name}: no answer within ${timeoutMs} ms\n${tail}`))),
          timeoutMs,
        );
        const onExit = () =>
          finish(() => reject(new Error(`${name} exited (${child.exitCode ?? child.signalCode}):\n${tail}`)));
        child.once("exit", onExit);
        function finish(settle: () => void) {
          clearTimeout(timer);
          child.off("exit", onExit);
          const at = waiters.indexOf(waiter);
          if (at >= 0) waiters.splice(at, 1);
          settle();
        }
        waiters.push(waiter);
        if (gone()) onExit();
      });
    },
    send(command) {
      child.stdin?.write(`${command}\n`);
    },
    log: () => tail,
    async stop(graceMs = 5000) {
      if (gone()) return;
      const kill = setTimeout(() => child.kill("SIGKILL"), graceMs);
      child.kill("SIGTERM");
      await exited;
      clearTimeout(kill);
    },
  };
}

/**
 * For processes the bench does not start through spawnNode (redis-server, Miniflare's workerd):
 * a tiny shell that SIGKILLs `pid` once the bench process is gone, however it went (even by
 * SIGKILL, which no handler sees). It polls once a second and ends with the bench. With `group`,
 * `pid` leads a process group (spawned detached) and the whole group goes: nginx's workers
 * outlive a killed master otherwise.
 */
export function killWhenBenchDies(pid: number, options: { group?: boolean } = {}): void {
  const target = options.group ? `-${pid}` : String(pid);
  const watchdog = spawn(
    "sh",
    ["-c", `while kill -0 ${process.pid} 2>/dev/null; do sleep 1; done; kill -9 ${target} 2>/dev/null`],
    {
      stdio: "ignore",
      detached: true,
    },
  );
  watchdog.unref();
}

/** SIGKILLs every tracked child and everything below it, synchronously (safe in an exit handler). */
export function killAll(): void {
  const pids = new Set<number>();
  for (const child of live) {
    if (child.pid === undefined) continue;
    for (const pid of descendantsOf(child.pid)) pids.add(pid);
    pids.add(child.pid);
  }
  // Processes spawned by libraries in this process (Miniflare's workerd, redis-server).
  for (const pid of descendantsOf(process.pid)) pids.add(pid);
  for (const pid of pids) {
    try {
      process.kill(pid, "SIGKILL");
    } catch {
      // already gone
    }
  }
}

/** Installs the exit, signal and crash handlers once. `cleanup` runs first on a signal. */
export function installReaper(cleanup: () => Promise<void>): void {
  process.once("exit", killAll);
  let stopping = false;
  const bail = (code: number, why: string) => {
    if (stopping) return;
    stopping = true;
    console.error(`bench: ${why}, cleaning up`);
    const force = setTimeout(() => process.exit(code), 8000);
    force.unref();
    cleanup().finally(() => process.exit(code));
  };
  process.once("SIGINT", () => bail(130, "interrupted"));
  process.once("SIGTERM", () => bail(143, "terminated"));
  process.on("uncaughtException", (err) => {
    console.error(err);
    bail(1, "uncaught exception");
  });
  process.on("unhandledRejection", (err) => {
    console.error(err);
    bail(1, "unhandled rejection");
  });
}
