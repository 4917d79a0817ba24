import type { ChildProcess } from "node:child_process";
import { existsSync, readdirSync, readFileSync, statSync } from "node:fs";
import { createConnection } from "node:net";
import { dirname, join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { freePort } from "../../src/runtime/node/process/free-port.ts";
import { startChallengeServer } from "../support/challenge-server.ts";
import { cloneLayout, spawnInClone } from "../support/clone-layout.ts";
import { heartbeatBody, registerBody } from "../support/registration.ts";

/**
 * `npm run dev` as a user runs it: wrangler dev (workerd) on an embedded redis-server through the
 * REST bridge, configured by the same variables as `npm start`. wrangler dev needs a few seconds
 * to come up on a small machine, hence the generous timeouts.
 */

const children: ChildProcess[] = [];

interface Dev {
  child: ChildProcess;
  output(): string;
  /** Resolves once npm has exited and every process holding its output pipes (the script, wrangler) is gone. */
  exited: Promise<number | null>;
}

// `npm run dev` keeps its dev store and key under the working folder's .pinboard/: the test's own.
const clone = cloneLayout();

function runDev(env: Record<string, string>): Dev {
  // Its own process group, so a signal reaches npm, the script and everything under it (npm
  // itself does not relay signals to the script).
  const { child, output } = spawnInClone(clone.dir, ["npm", "run", "dev"], { NO_COLOR: "1", ...env });
  children.push(child);
  const exited = new Promise<number | null>((resolve) => child.once("close", (code) => resolve(code)));
  return { child, output, exited };
}

function signalGroup(child: ChildProcess, signal: NodeJS.Signals): void {
  try {
    process.kill(-child.pid!, signal);
  } catch {
    // already gone
  }
}

afterAll(() => {
  for (const child of children) if (child.exitCode === null && child.signalCode === null) signalGroup(child, "SIGKILL");
  clone.remove();
});

async function waitFor<T>(what: string, dev: Dev, check: () => Promise<T | undefined>, timeoutMs: number): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await check();
    if (value !== undefined) return value;
    if (dev.child.exitCode !== null)
      throw new Error(`npm run dev exited with ${dev.child.exitCode} before ${what}:\n${dev.output()}`);
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}:\n${dev.output()}`);
    await new Promise((r) => setTimeout(r, 250));
  }
}

const accepts = (port: number) =>
  new Promise<boolean>((resolve) => {
    const socket = createConnection({ port, host: "127.0.0.1" });
    socket.once("connect", () => {
      socket.end();
      resolve(true);
    });
    socket.once("error", () => resolve(false));
  });

/** The command lines of every live process in process group `pgid` (Linux /proc), arguments joined by spaces. */
function groupCommandLines(pgid: number): string[] {
  const lines: string[] = [];
  for (const name of readdirSync("/proc")) {
    if (!/^\d+$/.test(name)) continue;
    try {
      const stat = readFileSync(`/proc/${name}/stat`, "utf8");
      // pid (comm) state ppid pgrp …: read after the last ")", comm may hold anything.
      const [state, , pgrp] = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
      if (Number(pgrp) !== pgid || state === "Z") continue;
      lines.push(readFileSync(`/proc/${name}/cmdline`, "utf8").split("\0").join(" "));
    } catch {
      // exited meanwhile
    }
  }
  return lines;
}

describe("npm run dev", () => {
  it("runs the Workers entry in wrangler dev with the npm start variables, and stops on SIGTERM", async () => {
    const port = await freePort();
    const worker = await startChallengeServer();
    const dev = runDev({ PORT: String(port), PINBOARD_BASE_PATH: "/pb", PINBOARD_LEASE_TTL_MS: "5000" });
    try {
      const base = `http://127.0.0.1:${port}/pb`;
      await waitFor(
        "/readyz 200",
        dev,
        () =>
          fetch(`${base}/readyz`).then(
            (r) => (r.status === 200 ? true : undefined),
            () => undefined,
          ),
        90_000,
      );
      // The banner comes right after the Worker answers; it names the file with the dev credentials.
      await waitFor("the banner", dev, async () => (/^Try:$/m.test(dev.output()) ? true : undefined), 10_000);
      expect(dev.output()).toContain(
        "are in .pinboard/dev.env (mode 0600; not printed, so they stay out of logs). Load them with:\n  . .pinboard/dev.env\n",
      );
      const devEnv = readFileSync(join(clone.dir, ".pinboard", "dev.env"), "utf8");
      const token = /^export PINBOARD_WORKER_TOKEN='(\S+)'$/m.exec(devEnv)?.[1];
      expect(token).toMatch(/^eyJ/);
      expect(devEnv).toContain(`export PINBOARD_URL='http://127.0.0.1:${port}/pb'\n`);
      // npm start's dev store and key, under the working folder's .pinboard/.
      const store = /embedded redis-server at redis:\/\/127\.0\.0\.1:(\d+) \(data in \.pinboard\/redis, new\)/;
      const redisPort = Number(store.exec(dev.output())?.[1]);
      expect(redisPort).toBeGreaterThan(0);
      expect(readFileSync(join(clone.dir, ".pinboard", "redis", "port"), "utf8")).toBe(`${redisPort}\n`);
      expect(devEnv).toMatch(
        new RegExp(`^export DURABLE_REDIS_URL='redis://pinned:[0-9a-f]{48}@127\\.0\\.0\\.1:${redisPort}'$`, "m"),
      );

      // No secret on a command line (`ps` shows those to every user) nor in the output: wrangler
      // reads the Worker's settings from a 0600 env file in a private temporary directory.
      const secret = readFileSync(join(clone.dir, ".pinboard", "dev-passport-secret"), "utf8").trim();
      expect(secret).toMatch(/^[0-9a-f]{64}$/);
      expect(dev.output()).not.toContain(secret);
      expect(dev.output()).not.toContain(token);
      const commands = groupCommandLines(dev.child.pid!);
      const wranglerLine = commands.find((line) => line.includes("wrangler.js dev"));
      expect(wranglerLine).toBeDefined();
      expect(
        commands.filter((line) => line.includes(secret!) || line.includes("--var") || line.includes("REST_TOKEN")),
      ).toEqual([]);
      const envFile = /--env-file (\S+)/.exec(wranglerLine!)?.[1];
      expect(envFile).toMatch(/\/pinboard-dev-[^/]+\/worker\.env$/);
      expect(statSync(envFile!).mode & 0o777).toBe(0o600);
      expect(statSync(dirname(envFile!)).mode & 0o777).toBe(0o700);
      const settings = readFileSync(envFile!, "utf8");
      expect(settings).toContain(`PINBOARD_PASSPORT_SECRET='${secret}'\n`);
      expect(settings).toMatch(/^UPSTASH_REDIS_REST_TOKEN='[A-Za-z0-9_-]{32}'$/m);

      // PINBOARD_BASE_PATH reached the Worker: nothing is served outside it.
      const outside = await fetch(`http://127.0.0.1:${port}/readyz`);
      expect(outside.status).toBe(404);

      const post = (path: string, body: unknown) =>
        fetch(`${base}${path}`, {
          method: "POST",
          headers: { authorization: `Bearer ${token}`, "content-type": "application/json" },
          body: JSON.stringify(body),
        });
      const reg = await post("/registry/register", registerBody(worker));
      expect(reg.status).toBe(200);
      const { sessionId, expiresInMs } = (await reg.json()) as { sessionId: string; expiresInMs: number };
      expect(expiresInMs).toBe(5000); // PINBOARD_LEASE_TTL_MS overrides wrangler.toml's var
      const hb = await post("/registry/heartbeat", heartbeatBody(worker, sessionId));
      expect(hb.status).toBe(200);
      expect(await hb.json()).toEqual({ expiresInMs: 5000, draining: false });

      signalGroup(dev.child, "SIGTERM");
      await dev.exited;
      expect(dev.output()).toContain("SIGTERM, shutting down");
      // Wrangler, workerd and the embedded redis-server are gone with it.
      const deadline = Date.now() + 15_000;
      while (((await accepts(port)) || (await accepts(redisPort))) && Date.now() < deadline) {
        await new Promise((r) => setTimeout(r, 200));
      }
      expect(await accepts(port)).toBe(false);
      expect(await accepts(redisPort)).toBe(false);
      // The env file goes with it.
      expect(existsSync(dirname(envFile!))).toBe(false);
    } finally {
      signalGroup(dev.child, "SIGKILL");
      await worker.close();
    }
  }, 150_000);

  it("stops at once on a bad variable, naming it", async () => {
    // A free port, never a fixed one: the configuration error must be what stops it.
    const dev = runDev({ PORT: String(await freePort()), PINBOARD_SHARDS: "0" });
    const code = await dev.exited;
    expect(code).toBe(1);
    expect(dev.output()).toMatch(/invalid configuration:\n\s+PINBOARD_SHARDS: /);
  }, 30_000);
});
