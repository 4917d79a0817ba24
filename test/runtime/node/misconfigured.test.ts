import { spawn } from "node:child_process";
import { mkdtempSync, symlinkSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";

/**
 * The Node entry (`src/node.ts`, as a process) with a configuration it cannot run on: it stops
 * before it listens, with exit status 1 and a message naming what to change. The parsing itself
 * is test/config.test.ts.
 */

const ROOT = fileURLToPath(new URL("../../../", import.meta.url));

function runNodeEntry(env: Record<string, string>): Promise<{ code: number | null; output: string }> {
  return new Promise((resolve) => {
    const child = spawn(process.execPath, ["--import", "tsx", "src/node.ts"], {
      env: { HOME: process.env.HOME ?? "", PATH: process.env.PATH ?? "", ...env },
      cwd: ROOT,
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
