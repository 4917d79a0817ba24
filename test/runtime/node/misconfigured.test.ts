import { spawn } from "node:child_process";
import { mkdtempSync, symlinkSync } from "node:fs";
import { createServer } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";
import { startEmbeddedRedis } from "../../../src/runtime/node/dev-store/embedded-redis.ts";
import { freePort } from "../../../src/runtime/node/process/free-port.ts";
import { TEST_PASSPORT_SECRET } from "../../support/pinboard-app.ts";

/**
 * The Node entry (`src/node.ts`, as a process) with a configuration it cannot run on: it stops
 * before it listens, with exit status 1 and a message naming what to change. The parsing itself
 * is test/config/config.unit.test.ts.
 */

const ROOT = fileURLToPath(new URL("../../../", import.meta.url));

/** Runs the entry in a folder of its own: a start without REDIS_URL keeps its dev store under the working folder. */
function runNodeEntry(env: Record<string, string>): Promise<{ code: number | null; output: string }> {
  return new Promise((resolve) => {
    const entry = [join(ROOT, "test/support/orphan-guard.ts"), join(ROOT, "src/node.ts")];
    const child = spawn(process.execPath, ["--import", import.meta.resolve("tsx"), "--import", ...entry], {
      env: { HOME: process.env.HOME ?? "", PATH: process.env.PATH ?? "", ...env },
      cwd: mkdtempSync(join(tmpdir(), "pinboard-entry-")),
      stdio: ["ignore", "pipe", "pipe"],
    });
    let output = "";
    child.stdout.on("data", (d: Buffer) => (output += d.toString()));
    child.stderr.on("data", (d: Buffer) => (output += d.toString()));
    child.on("exit", (code) => resolve({ code, output }));
  });
}

describe("the Node entry with a bad configuration", () => {
  it("a mistyped setting stops the Node entry before it listens", async () => {
    const { code, output } = await runNodeEntry({ PINBOARD_LEASE_TTL: "5000", PORT: "0" });
    expect(code).toBe(1);
    expect(output).toContain("PINBOARD_LEASE_TTL: not a Pinboard setting; did you mean PINBOARD_LEASE_TTL_MS?");
    expect(output).not.toContain("listening");
  });

  it("a bad value stops the Node entry with a message naming the variable", async () => {
    const { code, output } = await runNodeEntry({ PINBOARD_SHARDS: "abc", PORT: "0" });
    expect(code).toBe(1);
    expect(output).toContain("PINBOARD_SHARDS: expected an integer from 1 to 16384");
  });

  it("without REDIS_URL and without redis-server on PATH, says how to install Redis", async () => {
    const bin = mkdtempSync(join(tmpdir(), "pinboard-path-"));
    symlinkSync(process.execPath, join(bin, "node"));
    const { code, output } = await runNodeEntry({ PATH: bin, PORT: "0" });
    expect(code).toBe(1);
    expect(output).toContain("redis-server was not found on PATH");
    expect(output).toContain("apt-get install redis-server");
  });
});

describe("the Node entry where it cannot serve", () => {
  it("a port in use stops the start with what to do, before it claims the fleet or says it serves", async () => {
    const squatter = createServer();
    const port = await freePort();
    await new Promise<void>((resolve) => squatter.listen(port, "127.0.0.1", resolve));
    // A Redis that answers: with the old order the fleet was claimed ("serving the fleet") before the listen failed.
    const redis = await startEmbeddedRedis();
    try {
      const { code, output } = await runNodeEntry({
        PORT: String(port),
        HOST: "127.0.0.1",
        REDIS_URL: redis.url,
        PINBOARD_PASSPORT_SECRET: TEST_PASSPORT_SECRET,
        PINBOARD_LOG_LEVEL: "info",
      });
      expect(code).toBe(1);
      expect(output).toContain(`pinboard failed to start: listen EADDRINUSE: address already in use 127.0.0.1:${port}`);
      expect(output).toContain(
        "another program (another Pinboard?) listens on that port: stop it, or set PORT=… (PORT=0 takes a free one)",
      );
      expect(output).not.toContain("serving the fleet");
      expect(output).not.toContain("pinboard listening");
    } finally {
      squatter.close();
      await redis.stop();
    }
  });
});
