import { type ChildProcess, spawn } from "node:child_process";
import { createConnection } from "node:net";
import { freePort } from "../process/free-port.ts";
import { reapOnExit } from "../process/reap-on-exit.ts";

export interface EmbeddedRedis {
  readonly url: string;
  readonly port: number;
  readonly process: ChildProcess;
  /** Stops the server (SIGTERM, then SIGKILL after a grace period). */
  stop(): Promise<void>;
}

export interface EmbeddedRedisOptions {
  port?: number;
  /** Extra redis-server arguments, e.g. ["--cluster-enabled", "yes"]. */
  args?: string[];
  binary?: string;
  /**
   * redis-server configuration lines given on its stdin (`redis-server -`), for what must not be
   * on a command line that `ps` shows (users and their passwords).
   */
  config?: string;
  /** The default user's password, put in `url`. */
  password?: string;
}

export const REDIS_INSTALL_HINT = [
  "redis-server was not found on PATH.",
  "Pinboard runs a private Redis when REDIS_URL is not set; install one of:",
  "  Debian/Ubuntu: sudo apt-get install redis-server",
  "  macOS:         brew install redis",
  "or point Pinboard at an existing server: REDIS_URL=redis://host:6379 npm start",
].join("\n");

/**
 * Spawns a private, non-persistent `redis-server` on a free loopback port and waits until it
 * accepts connections. Used by `npm start` without REDIS_URL, by `npm run dev` and by tests.
 */
export async function startEmbeddedRedis(options: EmbeddedRedisOptions = {}): Promise<EmbeddedRedis> {
  const port = options.port ?? (await freePort());
  const binary = options.binary ?? "redis-server";
  const child = spawn(
    binary,
    [
      ...(options.config !== undefined ? ["-"] : []),
      "--port",
      String(port),
      "--bind",
      "127.0.0.1",
      "--save",
      "",
      "--appendonly",
      "no",
      // Loopback only either way; protected mode also refuses any other peer while no password is set.
      "--protected-mode",
      "yes",
      "--loglevel",
      "warning",
      ...(options.args ?? []),
    ],
    { stdio: [options.config !== undefined ? "pipe" : "ignore", "pipe", "pipe"] },
  );
  if (options.config !== undefined) {
    child.stdin?.on("error", () => {}); // a server that exits at once: its exit says why
    child.stdin?.end(options.config);
  }
  // Never outlive the process that spawned the server, however that process ends.
  reapOnExit(child);
  let output = "";
  child.stdout?.on("data", (chunk: Buffer) => (output = (output + chunk.toString()).slice(-4000)));
  child.stderr?.on("data", (chunk: Buffer) => (output = (output + chunk.toString()).slice(-4000)));

  const spawnError = new Promise<never>((_, reject) => {
    child.once("error", (err: NodeJS.ErrnoException) =>
      reject(err.code === "ENOENT" ? new Error(REDIS_INSTALL_HINT) : err),
    );
    child.once("exit", (code) => reject(new Error(`redis-server exited with code ${code}:\n${output}`)));
  });
  await Promise.race([waitForPort(port), spawnError]);
  spawnError.catch(() => {});

  let stopped: Promise<void> | undefined;
  return {
    url:
      options.password !== undefined ? `redis://:${options.password}@127.0.0.1:${port}` : `redis://127.0.0.1:${port}`,
    port,
    process: child,
    stop() {
      stopped ??= new Promise<void>((resolve) => {
        if (child.exitCode !== null || child.signalCode !== null) return resolve();
        const kill = setTimeout(() => child.kill("SIGKILL"), 3000);
        child.once("exit", () => {
          clearTimeout(kill);
          resolve();
        });
        child.kill("SIGTERM");
      });
      return stopped;
    },
  };
}

async function waitForPort(port: number, timeoutMs = 10_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const ok = await new Promise<boolean>((resolve) => {
      const socket = createConnection({ port, host: "127.0.0.1" });
      socket.once("connect", () => {
        socket.end();
        resolve(true);
      });
      socket.once("error", () => resolve(false));
    });
    if (ok) return;
    if (Date.now() > deadline) throw new Error(`redis-server did not listen on port ${port}`);
    await new Promise((r) => setTimeout(r, 20));
  }
}
