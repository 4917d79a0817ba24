import { execFile } from "node:child_process";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";

/** The operator CLI as a user first meets it: `npx pinboard --help` through package.json's bin. */

const ROOT = fileURLToPath(new URL("../../", import.meta.url));

describe("npx pinboard --help", { timeout: 20_000 }, () => {
  it("reaches the CLI and prints the usage", async () => {
    const out = await new Promise<{ code: number; stdout: string }>((resolve) =>
      execFile(
        "npx",
        ["--no-install", "pinboard", "--help"],
        { cwd: ROOT, env: { PATH: process.env.PATH ?? "", HOME: process.env.HOME ?? "" } },
        (err, stdout) => resolve({ code: err ? Number(err.code ?? 1) : 0, stdout }),
      ),
    );
    expect(out.code).toBe(0);
    expect(out.stdout).toMatch(/^usage: pinboard <command>/);
  });
});
