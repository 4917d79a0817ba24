import {
  existsSync,
  mkdirSync,
  mkdtempSync,
  readFileSync,
  rmSync,
  statSync,
  symlinkSync,
  writeFileSync,
} from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { DEV_SECRET_FILE, loadOrCreateDevSecret } from "../../../../src/runtime/node/dev-store/dev-credentials.ts";
import { writeDevEnvFile } from "../../../../src/runtime/node/dev-store/dev-env-file.ts";
import { readPrivateFile, writePrivateFile } from "../../../../src/runtime/node/dev-store/private-file.ts";

/** The dev files under `.pinboard/` are written 0600 and never through a symbolic link. */

const dirs: string[] = [];
afterEach(() => {
  for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true });
});

function tempDir(): string {
  const dir = mkdtempSync(join(tmpdir(), "pinboard-private-file-"));
  dirs.push(dir);
  return dir;
}

const refusal = (path: string) =>
  `refusing to use ${path}: it is a symbolic link (delete it; Pinboard writes its dev files itself)`;

describe("private dev files", () => {
  it("are written with mode 0600, replacing what was there, and read back", async () => {
    const path = join(tempDir(), "port");
    writeFileSync(path, "old contents that are longer\n", { mode: 0o644 });
    await writePrivateFile(path, "6379\n");
    expect(readFileSync(path, "utf8")).toBe("6379\n");
    expect(statSync(path).mode & 0o777).toBe(0o600);
    expect(await readPrivateFile(path)).toBe("6379\n");
    expect(await readPrivateFile(`${path}.absent`)).toBeUndefined();
  });

  it("are neither written nor read through a link", async () => {
    const dir = tempDir();
    const target = join(dir, "victim");
    writeFileSync(target, "untouched\n");
    symlinkSync(target, join(dir, "port"));
    await expect(writePrivateFile(join(dir, "port"), "1\n")).rejects.toThrow(refusal(join(dir, "port")));
    await expect(readPrivateFile(join(dir, "port"))).rejects.toThrow(refusal(join(dir, "port")));
    expect(readFileSync(target, "utf8")).toBe("untouched\n");
  });

  it("refuse a development key that is a link, and create none through it", async () => {
    const dir = tempDir();
    mkdirSync(join(dir, ".pinboard"));
    const elsewhere = join(dir, "elsewhere");
    symlinkSync(elsewhere, join(dir, DEV_SECRET_FILE));
    await expect(loadOrCreateDevSecret(dir)).rejects.toThrow(refusal(join(dir, DEV_SECRET_FILE)));
    expect(existsSync(elsewhere)).toBe(false);
  });

  it("write the dev env file 0600 (a link there stops the start), quoting values for the shell", async () => {
    const dir = tempDir();
    const file = await writeDevEnvFile(dir, { PINBOARD_URL: "http://127.0.0.1:8787", ODD: "it's $HOME" });
    const path = join(dir, ".pinboard", "dev.env");
    expect(file.shown).toBe(path);
    expect(statSync(path).mode & 0o777).toBe(0o600);
    expect(readFileSync(path, "utf8")).toContain(
      "export PINBOARD_URL='http://127.0.0.1:8787'\nexport ODD='it'\\''s $HOME'\n",
    );
    rmSync(path);
    const target = join(dir, "victim");
    symlinkSync(target, path);
    await expect(writeDevEnvFile(dir, { A: "b" })).rejects.toThrow(refusal(path));
    expect(existsSync(target)).toBe(false);
  });
});
