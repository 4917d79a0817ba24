import type { ChildProcess } from "node:child_process";
import { afterAll, describe, expect, it } from "vitest";
import { freePort } from "../../src/runtime/node/process/free-port.ts";
import { cloneLayout, spawnInClone } from "../support/clone-layout.ts";
import { until } from "../support/local-worker.ts";

/**
 * The README's Quick start as a newcomer runs it: `npm start` with no configuration at all (it
 * compiles dist/ when it is stale, then runs it with an embedded Redis and a development key; the
 * `npm install` before it is .ci/run's `npm ci` on a fresh clone), then the worker command it prints, run as printed in a
 * shell (it loads .pinboard/dev.env: the credentials and the workers' own Redis user); a counter counts twice, its worker is killed, a second worker
 * started the same way serves the same count at a higher epoch. A 3 s lease keeps the lease-out short.
 */

const children: ChildProcess[] = [];

/** Each child leads its own process group (a shell and what it started): signals reach them all. */
function signal(child: ChildProcess, name: NodeJS.Signals): void {
  if (child.pid === undefined) return;
  try {
    process.kill(-child.pid, name);
  } catch {
    // The group is gone already.
  }
}

afterAll(() => {
  for (const child of children) signal(child, "SIGKILL");
  clone.remove();
});

const clone = cloneLayout();

function start(command: string[], env: Record<string, string>): { child: ChildProcess; output: () => string } {
  const started = spawnInClone(clone.dir, command, env);
  children.push(started.child);
  return started;
}

describe("Quick start", () => {
  it("npm start prints what starts a worker; the counter counts, and survives its worker", {
    timeout: 240_000,
  }, async () => {
    const port = await freePort();
    const pinboard = start(["npm", "start"], { PORT: String(port), PINBOARD_LEASE_TTL_MS: "3000" });
    // A fresh clone compiles first (tens of seconds on a loaded 2-core machine).
    const banner = await until(() => (/^Try:$/m.test(pinboard.output()) ? pinboard.output() : null), 150_000, 100);

    // What the banner tells the newcomer to run, taken literally; no credential in it (stdout is a service's log).
    expect(banner).toMatch(
      /^Redis: embedded redis-server at redis:\/\/127\.0\.0\.1:\d+ \(data in \.pinboard\/redis, new\); stopped with Pinboard$/m,
    );
    expect(banner).toMatch(new RegExp(`^Console: http://127\\.0\\.0\\.1:${port}/console$`, "m"));
    expect(banner).not.toMatch(/eyJ|PINBOARD_PASSPORT_SECRET=|redis:\/\/pinned:/);
    const lines = banner.split("\n");
    const workerCommand = lines[lines.indexOf("Start a worker (in another terminal):") + 1]!.trim();
    expect(workerCommand).toBe(". .pinboard/dev.env && CLIENT_ID=worker-a npx tsx examples/worker.ts");
    const shell = (command: string) => start(["bash", "-c", command], {});

    const first = shell(workerCommand);
    await until(() => /serving \/counter and \/chat/.test(first.output()), 30_000, 50);
    const base = `http://127.0.0.1:${port}`;
    const increment = async () => {
      const res = await fetch(`${base}/counter/demo/increment`, { method: "POST" });
      return res.status === 200 ? ((await res.json()) as { count: number; epoch: string }) : null;
    };
    // A dev store this start created has no cold start: the first request after the worker registered is served.
    const one = (await increment())!;
    expect(one.count).toBe(1);
    const two = (await increment())!;
    expect(two).toMatchObject({ count: 2, epoch: one.epoch });

    signal(first.child, "SIGKILL");
    const second = shell(workerCommand.replace("CLIENT_ID=worker-a", "CLIENT_ID=worker-b"));
    await until(() => /serving \/counter and \/chat/.test(second.output()), 30_000, 50);
    const back = await until(
      async () => {
        const res = await fetch(`${base}/counter/demo`);
        return res.status === 200 ? ((await res.json()) as { count: number; epoch: string }) : null;
      },
      20_000,
      200,
    );
    expect(back.count).toBe(2);
    expect(BigInt(back.epoch)).toBeGreaterThan(BigInt(one.epoch));

    signal(second.child, "SIGTERM");
    signal(pinboard.child, "SIGTERM");
  });
});
