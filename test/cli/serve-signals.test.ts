import { type ChildProcess, spawn } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { connect } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { afterEach, describe, expect, it } from "vitest";
import { startNodeFlags } from "../../bin/node-flags.mjs";
import { freePort } from "../../src/runtime/node/process/free-port.ts";
import { until } from "../support/local-worker.ts";
import { childPids, processExists } from "../support/process-tree.ts";

/**
 * `pinboard serve` as Docker and supervisors run it: they signal the main pid only. The launcher
 * (bin/pinboard.mjs) must stop what it started (the Node server and its embedded redis-server),
 * wait for them and exit 0, and do the same when `npx`'s `sh -c` parent dies under it.
 */

const ROOT = fileURLToPath(new URL("../../", import.meta.url));
const started: ChildProcess[] = [];
/** Every process a test saw, killed after it even when a failed assertion orphaned them. */
const seen: number[] = [];
const dirs: string[] = [];

afterEach(() => {
  for (const child of started.splice(0)) if (child.pid) killTree(child.pid);
  for (const pid of seen.splice(0)) killTree(pid);
  for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true });
});

/** SIGKILLs `pid` and everything under it (cleanup after a failed assertion). */
function killTree(pid: number): void {
  for (const child of childPids(pid, "")) killTree(child);
  try {
    process.kill(pid, "SIGKILL");
  } catch {
    // gone already
  }
}

/** Spawns `command` (which runs bin/pinboard.mjs serve) in a fresh directory, on a free port. */
async function serve(command: string[]) {
  const dir = mkdtempSync(join(tmpdir(), "pinboard-serve-"));
  dirs.push(dir);
  const port = await freePort();
  const child = spawn(command[0]!, command.slice(1), {
    cwd: dir,
    env: { PATH: process.env.PATH ?? "", HOME: process.env.HOME ?? "", PORT: String(port) },
    stdio: ["ignore", "pipe", "pipe"],
  });
  started.push(child);
  let output = "";
  child.stdout!.on("data", (d: Buffer) => (output += d.toString()));
  child.stderr!.on("data", (d: Buffer) => (output += d.toString()));
  const exited = new Promise<number | null>((resolve) => child.once("exit", (code) => resolve(code)));
  // A clone rebuilds a stale dist/ first.
  await until(() => output.includes('"msg":"pinboard listening"'), 120_000);
  return { child, port, exited, output: () => output };
}

/** The launcher under `root`, its server process and the server's redis-server. */
function tree(root: number) {
  const launcher = root;
  const [server] = childPids(launcher, "dist/src/node.js");
  const [redis] = childPids(server!, "redis-server");
  seen.push(launcher, server!, redis!);
  return { launcher, server: server!, redis: redis! };
}

const portClosed = (port: number) =>
  new Promise<boolean>((resolve) => {
    const socket = connect(port, "127.0.0.1");
    socket.once("connect", () => {
      socket.destroy();
      resolve(false);
    });
    socket.once("error", () => resolve(true));
  });

describe("pinboard serve and signals to the main pid", () => {
  it("SIGTERM to the launcher stops the server and its redis-server, and exits 0", async () => {
    const s = await serve([process.execPath, join(ROOT, "bin/pinboard.mjs"), "serve"]);
    const pids = tree(s.child.pid!);
    expect(pids.server).toBeGreaterThan(0);
    expect(pids.redis).toBeGreaterThan(0);
    expect(await portClosed(s.port)).toBe(false);
    // The server runs with `npm start`'s Node flags (package.json config.nodeFlags).
    const serverArgv = readFileSync(`/proc/${pids.server}/cmdline`, "utf8").split("\0");
    expect(startNodeFlags()).toContain("--max-old-space-size=1024");
    expect(serverArgv).toEqual(expect.arrayContaining(startNodeFlags()));

    process.kill(pids.launcher, "SIGTERM");
    expect(await s.exited).toBe(0);
    await until(() => !processExists(pids.server) && !processExists(pids.redis), 15_000);
    expect(await portClosed(s.port)).toBe(true);
    expect(s.output()).toContain("pinboard: SIGTERM, shutting down");
  }, 180_000);

  it("a second signal forces: exit 1 at once, and the redis-server is still stopped", async () => {
    const s = await serve([process.execPath, join(ROOT, "bin/pinboard.mjs"), "serve"]);
    const pids = tree(s.child.pid!);
    // Two different signals, so that neither is merged into the other while pending.
    process.kill(pids.launcher, "SIGTERM");
    process.kill(pids.launcher, "SIGINT");
    expect(await s.exited).toBe(1);
    await until(() => !processExists(pids.server) && !processExists(pids.redis), 15_000);
    expect(await portClosed(s.port)).toBe(true);
    expect(s.output()).toMatch(/pinboard: SIG(TERM|INT) again, exiting at once\n/);
  }, 180_000);

  it("a launcher whose parent dies (npx's sh -c, signalled by npm) stops the server and its redis-server", async () => {
    // `; exit $?` keeps sh from exec-ing the launcher: sh stays its parent, as under npm exec.
    const launcher = `'${process.execPath}' '${join(ROOT, "bin/pinboard.mjs")}' serve; exit $?`;
    const s = await serve(["sh", "-c", launcher]);
    const [launcherPid] = childPids(s.child.pid!, "bin/pinboard.mjs");
    const pids = tree(launcherPid!);
    expect(pids.redis).toBeGreaterThan(0);

    process.kill(s.child.pid!, "SIGTERM");
    await s.exited;
    await until(
      () => !processExists(pids.launcher) && !processExists(pids.server) && !processExists(pids.redis),
      15_000,
    );
    expect(await portClosed(s.port)).toBe(true);
    expect(s.output()).toContain("pinboard: SIGTERM, shutting down");
  }, 180_000);
});
