import { spawn } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { createServer, type Server } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { afterAll, describe, expect, it } from "vitest";
import { readmeBlock } from "../../scripts/check-package.ts";

/**
 * The README's worker (the block after `<!-- package-check: worker.mjs -->`), run with `node` as
 * a user runs it, with two mistakes a user makes: what it prints names the cause and the fix on a
 * line of its own, not `Cannot read properties of undefined` or a chain of stacks. The package's
 * import is pointed at the source (scripts/check-package.ts runs the block from the packed package).
 */

const ROOT = fileURLToPath(new URL("../../", import.meta.url));
const dir = mkdtempSync(join(tmpdir(), "readme-worker-"));
const script = join(dir, "worker.mjs");
writeFileSync(
  script,
  readmeBlock(readFileSync(join(ROOT, "README.md"), "utf8"), "worker.mjs", "js").replace(
    '"pinboard/pinned"',
    JSON.stringify(join(ROOT, "src/pinned/index.ts")),
  ),
);
afterAll(() => rmSync(dir, { recursive: true, force: true }));

/** Runs the README's worker with `env` until it exits: its exit code and everything it printed. */
async function runReadmeWorker(env: Record<string, string>): Promise<{ code: number | null; output: string }> {
  const child = spawn(process.execPath, ["--import", "tsx", script], {
    cwd: ROOT,
    env: { PATH: process.env.PATH ?? "", HOME: process.env.HOME ?? "", ...env },
    stdio: ["ignore", "pipe", "pipe"],
  });
  let output = "";
  child.stdout.on("data", (d: Buffer) => (output += d.toString()));
  child.stderr.on("data", (d: Buffer) => (output += d.toString()));
  const kill = setTimeout(() => child.kill("SIGKILL"), 15_000);
  const code = await new Promise<number | null>((resolve) => child.once("exit", resolve));
  clearTimeout(kill);
  return { code, output };
}

const lines = (output: string) => output.split("\n");

describe("the README's worker.mjs", () => {
  it("without DURABLE_REDIS_URL: one line names the setting", async () => {
    const { code, output } = await runReadmeWorker({
      PINBOARD_URL: "http://127.0.0.1:8787",
      PINBOARD_WORKER_TOKEN: "token",
    });
    expect(code, output).toBe(1);
    expect(lines(output)).toContain(
      "TypeError: RedisDurabilityStore: no Redis given: set the redis option to a redis:// URL " +
        "(DURABLE_REDIS_URL in .pinboard/dev.env after npm start) or an ioredis client",
    );
    expect(output).not.toContain("Cannot read properties");
  }, 20_000);

  it("on a port another process holds: one line names the port and the fix, and no chain of causes", async () => {
    const taken: Server = createServer();
    await new Promise<void>((resolve) => taken.listen(0, "127.0.0.1", resolve));
    const port = (taken.address() as { port: number }).port;
    try {
      const { code, output } = await runReadmeWorker({
        PINBOARD_URL: "http://127.0.0.1:8787",
        PINBOARD_WORKER_TOKEN: "token",
        DURABLE_REDIS_URL: "redis://127.0.0.1:1",
        PORT: String(port),
      });
      expect(code, output).toBe(1);
      expect(lines(output)).toContain(
        `Error: listen: port ${port} is in use (EADDRINUSE); pick another PORT or 0 for a free one`,
      );
      expect(output).not.toContain("[cause]");
      expect(output).not.toContain("address already in use");
    } finally {
      await new Promise((resolve) => taken.close(resolve));
    }
  }, 20_000);
});
